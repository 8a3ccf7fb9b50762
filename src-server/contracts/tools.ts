import { z } from 'zod';
import { GatePolicySchema } from './gate-policy';

/**
 * Tools an agent's phases may call (docs/tools.md): MCP servers declared in the asset, and the built-in project tools
 * over the run's project path. Declared in asset files only, never in a request: a stdio server is a command on the
 * server's machine.
 */

/** `project`: the built-in tools over the run's project path; any other name is an MCP server the asset declares. */
export const PROJECT_TOOLS_SERVER = 'project';

/** The built-in tools over the run's project path; `write_file` asks by default, the others only read. */
export const PROJECT_TOOL_NAMES = [
  'list_files',
  'read_file',
  'search_files',
  'git_diff',
  'git_log',
  'git_show',
  'write_file',
] as const;
export type ProjectToolName = (typeof PROJECT_TOOL_NAMES)[number];

/** A server's or a tool's name, as a tool's full name `<server>.<tool>` joins them. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The placeholder a stdio server's arguments may carry: the run's project folder (local project paths only). */
export const PROJECT_PATH_PLACEHOLDER = '{project_path}';

/** Who changed a setting: a user's id and, while the user exists, their name. */
const ChangedBySchema = z.object({ id: z.string(), name: z.string().nullable() });

export const McpServerSchema = z
  .discriminatedUnion('transport', [
    z.object({
      name: z.string(),
      transport: z.literal('stdio'),
      command: z.string(),
      args: z.array(z.string()),
      /** Names of environment variables the server gets from the service's environment; nothing else reaches it. */
      env: z.array(z.string()),
    }),
    z.object({
      name: z.string(),
      transport: z.literal('http'),
      /** A streamable HTTP endpoint; the same address rules as webhooks and git URLs. */
      url: z.string(),
      /** header → the environment variable that holds its value (never the value itself). */
      headers: z.record(z.string(), z.string()),
    }),
  ])
  .meta({ id: 'McpServer' });
export type McpServer = z.infer<typeof McpServerSchema>;

/**
 * A server of the instance's registry (docs/tools.md#the-instances-mcp-servers), which stored agents name. Only
 * instance administrators see its declaration: it names a program or an address, and the variables that hold
 * credentials.
 */
export const RegisteredMcpServerSchema = z
  .object({
    name: z.string(),
    transport: z.enum(['stdio', 'http']),
    server: McpServerSchema.nullable().meta({
      description: 'the declaration; null unless the caller administers the instance',
    }),
    registered_by: ChangedBySchema.nullable().meta({
      description: 'who registered the current declaration; null for a user since deleted',
    }),
    registered_at: z.string().meta({ description: 'ISO 8601: when the current declaration was registered' }),
  })
  .meta({ id: 'RegisteredMcpServer' });
export type RegisteredMcpServer = z.infer<typeof RegisteredMcpServerSchema>;

export const ToolPolicyKindSchema = z.enum(['allow', 'ask', 'deny']);
export type ToolPolicyKind = z.infer<typeof ToolPolicyKindSchema>;

/**
 * The policy of the tools a pattern names: `<server>.<tool>`, or `<server>.*` for every tool of a server. The most
 * specific pattern wins; a tool no pattern names is asked, with the default gate options (fail closed).
 */
export const ToolPolicySchema = z
  .object({
    tool: z.string(),
    policy: ToolPolicyKindSchema,
    /** ask: who decides, how many approve, and what happens when nobody does in time, as at a gate. */
    // A union rather than .nullable(): the document would say the GatePolicy it refers to, which refuses null.
    ask: z.union([GatePolicySchema, z.null()]),
  })
  .meta({ id: 'ToolPolicy' });
export type ToolPolicy = z.infer<typeof ToolPolicySchema>;

/**
 * Where the policy that applies to a call came from: the agent's own policies, its organisation's floor (which made
 * it stricter than the agent's), or the default for a tool no pattern of the agent names.
 */
export const PolicySourceSchema = z.enum(['agent', 'organisation', 'default']).meta({ id: 'PolicySource' });

/**
 * What a comparison did with a tool call (docs/compare.md): gave the answer the run it compares recorded for the same
 * call (same tool, same canonical arguments), ran it (a read-only tool the original never called so), or did not run
 * it (a tool that asks a person or may act on the world, which the original never called so).
 */
export const ToolReplaySchema = z
  .enum(['recorded', 'ran', 'not_run'])
  .meta({ id: 'ToolReplay', description: "a comparison's tool call: the original's recorded answer, run, or not run" });
export type ToolReplay = z.infer<typeof ToolReplaySchema>;
export type PolicySource = z.infer<typeof PolicySourceSchema>;

/**
 * An organisation's floor of tool policies (docs/tools.md#an-organisations-floor), as runs apply it: no agent of the
 * organisation loosens it.
 */
export const OrgToolPoliciesSchema = z
  .object({
    org_id: z.uuid(),
    policies: z.array(ToolPolicySchema).meta({ description: 'empty: the organisation sets no floor' }),
    updated_by: ChangedBySchema.nullable().meta({
      description: 'who set them last; null: never set, or a user deleted',
    }),
    updated_at: z.string().nullable().meta({ description: 'ISO 8601: when they were set last; null: never' }),
  })
  .meta({ id: 'OrgToolPolicies' });
export type OrgToolPolicies = z.infer<typeof OrgToolPoliciesSchema>;

export const ToolsDeclarationSchema = z
  .object({
    servers: z.array(McpServerSchema),
    policies: z.array(ToolPolicySchema),
    question_expiry_s: z
      .number()
      .int()
      .positive()
      .optional()
      .meta({
        description:
          'seconds a question a tool server asks mid-call waits for a person (`tools.questions_expire_after`); ' +
          "without it, the server's TOOL_QUESTION_EXPIRY_S",
      }),
  })
  .meta({ id: 'ToolsDeclaration' });
export type ToolsDeclaration = z.infer<typeof ToolsDeclarationSchema>;

export const NO_TOOLS: ToolsDeclaration = { servers: [], policies: [] };

/** Tool calls a phase makes at most unless its asset says otherwise (`max_tool_calls`). */
export const DEFAULT_MAX_TOOL_CALLS = 10;

/**
 * What a phase may use: tool patterns (`project.read_file`, `files.*`) and its limit of calls. A phase without tools
 * only writes text.
 */
export const PhaseToolsSchema = z
  .object({
    tools: z.array(z.string()),
    max_tool_calls: z.number().int().min(1).max(100),
  })
  .meta({ id: 'PhaseTools' });
export type PhaseTools = z.infer<typeof PhaseToolsSchema>;

/**
 * A phase after a gate that writes the text the gate approved, with one tool call: the gate's approval covers exactly
 * that text (bound by its SHA-256), so nobody is asked again. `arguments` are the call's other arguments; `content`
 * names the argument that receives the text.
 */
export const PublishStepSchema = z
  .object({
    tool: z.string(),
    /** The phase whose (approved) output is written. */
    from: z.string(),
    content: z.string(),
    arguments: z.record(z.string(), z.string()),
  })
  .meta({ id: 'PublishStep' });
export type PublishStep = z.infer<typeof PublishStepSchema>;

/** What MCP's tool annotations say, and what the built-in tools say of themselves. */
export const ToolAnnotationsSchema = z
  .object({
    read_only: z.boolean(),
    idempotent: z.boolean(),
    destructive: z.boolean(),
  })
  .meta({ id: 'ToolAnnotations' });
export type ToolAnnotations = z.infer<typeof ToolAnnotationsSchema>;

/** A tool as the model sees it: its full name, description and JSON Schema of its input. */
export interface ToolDefinition {
  /** `<server>.<tool>` */
  name: string;
  server: string;
  /** The tool's own name on its server. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations;
}

/** A tool's answer: untrusted text, size-capped, never HTML, never a policy. */
export interface ToolResult {
  text: string;
  is_error: boolean;
}

/** The most characters of a tool's answer that reach the model and the record; the rest is cut with a note. */
export const MAX_TOOL_RESULT_CHARS = 64 * 1024;

/**
 * A tool call waiting for a person (a pending item of the kind tool call): the exact tool, server and arguments the
 * model asked for, as they will run if approved.
 */
export const PendingToolCallSchema = z
  .object({
    call_id: z.string().meta({ description: 'the call: its run, node, visit, model turn and place in the turn' }),
    tool: z.string().meta({ description: 'the full name, `<server>.<tool>`' }),
    server: z.string(),
    description: z.string(),
    arguments: z.record(z.string(), z.unknown()).meta({ description: 'the arguments as the model gave them' }),
    canonical_arguments: z.string().meta({ description: 'the arguments in RFC 8785 (JSON Canonicalization) form' }),
    arguments_sha256: z.string().meta({ description: 'SHA-256 of canonical_arguments, hex: what an approval binds' }),
    input_schema: z
      .record(z.string(), z.unknown())
      .meta({ description: "the tool's JSON Schema: an edit must fit it" }),
    annotations: ToolAnnotationsSchema,
    interrupted: z.boolean().meta({
      description:
        'true: the call was approved and started, and its process stopped before its result was stored; approving ' +
        'runs it again',
    }),
    attempts: z.number().int().meta({ description: 'how often it was started so far' }),
    policy_source: PolicySourceSchema.optional().meta({
      description:
        "where the policy that asks came from: the agent's, its organisation's floor, or the default; absent for a " +
        'call that began waiting before the service recorded it',
    }),
  })
  .meta({ id: 'PendingToolCall' });
export type PendingToolCall = z.infer<typeof PendingToolCallSchema>;
