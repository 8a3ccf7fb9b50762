import { z } from 'zod';
import { SERVICE_SECRET_VARIABLES } from '../config';
import type { GraphLayout } from '../contracts/assets';
import {
  DEFAULT_MAX_TOOL_CALLS,
  PROJECT_TOOL_NAMES,
  PROJECT_TOOLS_SERVER,
  PhaseToolsSchema,
  TOOL_NAME_PATTERN,
  ToolPolicyKindSchema,
  type McpServer,
  type PhaseTools,
  type PublishStep,
  type ToolPolicy,
  type ToolsDeclaration,
} from '../contracts/tools';
import { fail, type AssetSource, type FieldPath } from './asset-error';
import { GATE_OPTION_FIELDS, GATE_OPTION_NAMES, gatePolicy } from './gate-options';

/**
 * The `tools` section of an asset's frontmatter and a phase's fields about tools (docs/tools.md#declaring-tools),
 * checked and turned into the manifest's ToolsDeclaration and a phase's PhaseTools and PublishStep.
 */

// Either `command` (stdio) or `url` (streamable HTTP); which fields go with which is checked by hand, to say why.
const ServerFrontmatterSchema = z
  .object({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    env: z.array(z.string()).optional(),
    url: z.string().min(1).optional(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

// `files.*: allow` is short for `files.*: { policy: allow }`.
const PolicyFrontmatterSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { policy: value } : value),
  z.object({ policy: ToolPolicyKindSchema, ...GATE_OPTION_FIELDS }).strict(),
);

export const ToolsFrontmatterSchema = z
  .object({
    servers: z.record(z.string(), ServerFrontmatterSchema).default({}),
    policies: z.record(z.string(), PolicyFrontmatterSchema).default({}),
  })
  .strict();
export type ToolsFrontmatter = z.infer<typeof ToolsFrontmatterSchema>;

/** A phase's fields about tools, beside its other fields. */
export const PHASE_TOOL_FIELDS = {
  tools: z.array(z.string().min(1)).min(1).optional(),
  max_tool_calls: PhaseToolsSchema.shape.max_tool_calls.optional(),
  publish: z
    .object({
      tool: z.string().min(1),
      from: z.string().min(1),
      content: z.string().min(1),
      arguments: z.record(z.string(), z.string()).default({}),
    })
    .strict()
    .optional(),
};
type PhaseToolFields = z.infer<z.ZodObject<typeof PHASE_TOOL_FIELDS>>;
const PHASE_TOOL_FIELD_NAMES = Object.keys(PHASE_TOOL_FIELDS) as (keyof PhaseToolFields)[];

/** What a server is given by name, to be read from the service's environment: never a value written in the asset. */
const VARIABLE_NAME = /^[A-Z_][A-Z0-9_]*$/;
/** An HTTP header's name (a token, RFC 9110). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The MCP servers an asset declares and the policies of their tools and of the project tools. */
export function toolsDeclarationOf(source: AssetSource, given: ToolsFrontmatter): ToolsDeclaration {
  const servers = Object.entries(given.servers).map(([name, server]) =>
    serverOf(source, ['tools', 'servers', name], name, server),
  );
  const declared = new Set(servers.map((s) => s.name));
  const policies = Object.entries(given.policies).map(([pattern, policy]) =>
    policyOf(source, ['tools', 'policies', pattern], pattern, policy, declared),
  );
  return { servers, policies };
}

function serverOf(
  source: AssetSource,
  at: FieldPath,
  name: string,
  given: z.infer<typeof ServerFrontmatterSchema>,
): McpServer {
  if (name === PROJECT_TOOLS_SERVER)
    fail(source, at, `"${PROJECT_TOOLS_SERVER}" is the name of the built-in project tools: give the server another`);
  if (!TOOL_NAME_PATTERN.test(name))
    fail(source, at, `"${name}" must be 1 to 64 letters, digits, _ and -, as tools are named <server>.<tool>`);
  const { command, url } = given;
  if (command !== undefined && url !== undefined)
    fail(source, at, 'has both command and url: a server is a program over stdio (command) or an HTTP endpoint (url)');
  if (command !== undefined) {
    if (given.headers) fail(source, [...at, 'headers'], 'are for a server with a url: a stdio server gets env');
    const env = given.env ?? [];
    env.forEach((variable, i) => checkVariable(source, [...at, 'env', i], variable));
    return { name, transport: 'stdio', command, args: given.args ?? [], env };
  }
  if (url === undefined) fail(source, at, 'needs command (a program over stdio) or url (a streamable HTTP endpoint)');
  for (const field of ['args', 'env'] as const) {
    if (given[field]) fail(source, [...at, field], 'is for a server with a command: a server with a url gets headers');
  }
  checkUrl(source, [...at, 'url'], url);
  const headers = given.headers ?? {};
  for (const [header, variable] of Object.entries(headers)) {
    if (!HEADER_NAME.test(header)) fail(source, [...at, 'headers', header], `"${header}" is not an HTTP header name`);
    checkVariable(source, [...at, 'headers', header], variable);
  }
  return { name, transport: 'http', url, headers };
}

function checkVariable(source: AssetSource, at: FieldPath, name: string): void {
  if (!VARIABLE_NAME.test(name)) {
    fail(
      source,
      at,
      // Not repeated in the message: it may be the secret itself, written where its variable's name belongs.
      'is not the name of an environment variable (A-Z, 0-9 and _, not starting with a digit): name the variable that holds the value, never the value',
    );
  }
  if ((SERVICE_SECRET_VARIABLES as readonly string[]).includes(name))
    fail(source, at, `"${name}" is one of the service's own secrets; a tool's server never gets it`);
}

// The address itself (private networks, DNS) is checked when a run connects, as for webhooks.
function checkUrl(source: AssetSource, at: FieldPath, text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    fail(source, at, 'is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    fail(source, at, `must be an http or https URL, not ${url.protocol.slice(0, -1)}`);
  // Not repeated in the message: what is in the URL may be a password.
  if (url.username || url.password)
    fail(source, at, 'carries credentials: give them in headers (a header → the variable holding its value)');
}

function policyOf(
  source: AssetSource,
  at: FieldPath,
  pattern: string,
  given: z.infer<typeof PolicyFrontmatterSchema>,
  declared: ReadonlySet<string>,
): ToolPolicy {
  checkToolName(source, at, pattern, declared, { wildcard: true });
  if (given.policy === 'ask') return { tool: pattern, policy: 'ask', ask: gatePolicy(source, at, given, null) };
  for (const option of GATE_OPTION_NAMES) {
    if (given[option] !== undefined)
      fail(source, [...at, option], `only a policy that asks takes a gate's options; this one is ${given.policy}`);
  }
  return { tool: pattern, policy: given.policy, ask: null };
}

/**
 * `<server>.<tool>` of a declared server or a project tool, or, where `wildcard`, `<server>.*`: every tool of a
 * server (an MCP server's tools are only known when it runs).
 */
function checkToolName(
  source: AssetSource,
  at: FieldPath,
  name: string,
  declared: ReadonlySet<string>,
  { wildcard }: { wildcard: boolean },
): void {
  const dot = name.indexOf('.');
  const [server, tool] = [name.slice(0, dot), name.slice(dot + 1)];
  if (!wildcard && dot !== -1 && tool === '*')
    fail(source, at, `"${name}" names every tool of "${server}": publish makes one call, name its tool`);
  const shape = wildcard ? '<server>.<tool> or <server>.*' : '<server>.<tool>';
  if (dot === -1 || !TOOL_NAME_PATTERN.test(server) || !(TOOL_NAME_PATTERN.test(tool) || (wildcard && tool === '*')))
    fail(source, at, `"${name}" is not ${shape}`);
  if (server === PROJECT_TOOLS_SERVER) {
    if (tool !== '*' && !(PROJECT_TOOL_NAMES as readonly string[]).includes(tool))
      fail(source, at, `"${tool}" is not a project tool: they are ${PROJECT_TOOL_NAMES.join(', ')}`);
  } else if (!declared.has(server)) {
    fail(
      source,
      at,
      `server "${server}" is not declared in tools.servers (nor is it "${PROJECT_TOOLS_SERVER}", the built-in project tools)`,
    );
  }
}

/**
 * What a phase may call, or the one call with which it publishes what the gate before it approved. Only llm phases
 * call tools; `shownBy(gate)` is a gate's required_approval_context, the phases whose output its approval covers.
 */
export function phaseToolsOf(
  source: AssetSource,
  node: GraphLayout['nodes'][number],
  given: PhaseToolFields,
  declared: ReadonlySet<string>,
  layout: GraphLayout,
  shownBy: (gate: string) => readonly string[],
): { tools?: PhaseTools; publish?: PublishStep } {
  const at = ['phases', node.id];
  if (node.kind !== 'llm') {
    for (const field of PHASE_TOOL_FIELD_NAMES) {
      if (given[field] !== undefined)
        fail(source, [...at, field], `"${node.id}" is a ${node.kind} node: only llm nodes call tools`);
    }
    return {};
  }
  if (given.max_tool_calls !== undefined && given.tools === undefined)
    fail(source, [...at, 'max_tool_calls'], 'needs tools: a phase without tools calls none');
  if (given.tools && given.publish) {
    fail(source, [...at, 'publish'], 'a phase that publishes makes that one call and no other: it takes no tools');
  }
  given.tools?.forEach((name, i) => checkToolName(source, [...at, 'tools', i], name, declared, { wildcard: true }));
  if (given.tools)
    return { tools: { tools: given.tools, max_tool_calls: given.max_tool_calls ?? DEFAULT_MAX_TOOL_CALLS } };
  if (!given.publish) return {};

  const publish = given.publish;
  const field = [...at, 'publish'];
  const gates = layout.edges.filter((e) => e.to === node.id && e.condition === 'approved').map((e) => e.from);
  if (!gates.length) {
    fail(
      source,
      field,
      `"${node.id}" does not follow a gate's approval in graph "${layout.name}": publish writes only text a gate approved`,
    );
  }
  for (const gate of gates) {
    if (!shownBy(gate).includes(publish.from)) {
      fail(
        source,
        [...field, 'from'],
        `"${publish.from}" is not in gate "${gate}"'s required_approval_context: publish writes only text that gate showed and approved`,
      );
    }
  }
  checkToolName(source, [...field, 'tool'], publish.tool, declared, { wildcard: false });
  if (Object.hasOwn(publish.arguments, publish.content)) {
    fail(
      source,
      [...field, 'arguments', publish.content],
      `"${publish.content}" receives the approved text (content): it is not one of the other arguments`,
    );
  }
  return {
    publish: { tool: publish.tool, from: publish.from, content: publish.content, arguments: publish.arguments },
  };
}
