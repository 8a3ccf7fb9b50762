import { z } from 'zod';
import { isServiceVariable } from '../config';
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
import { check, fail, type AssetSource, type FieldPath } from './asset-error';
import { DurationSchema, durationSeconds, GATE_OPTION_FIELDS, GATE_OPTION_NAMES, gatePolicy } from './gate-options';

/**
 * The `tools` section of an asset's frontmatter and a phase's fields about tools (docs/tools.md#declaring-tools),
 * checked and turned into the manifest's ToolsDeclaration and a phase's PhaseTools and PublishStep.
 */

/** Caps on what one asset declares: a stored agent's text is untrusted, and each of these costs work at every run. */
const MAX_SERVERS = 16;
const MAX_TOOL_POLICIES = 64;
const MAX_PHASE_TOOLS = 64;
/** A tool server's question holds its call open while it waits: a day at most. */
export const MAX_QUESTION_EXPIRY_S = 86_400;

// Either `command` (stdio), `url` (streamable HTTP) or `registry` (a server the instance registered); which fields go
// with which is checked by hand, to say why.
export const ServerFrontmatterSchema = z
  .object({
    registry: z.string().min(1).optional(),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    env: z.array(z.string()).optional(),
    url: z.string().min(1).optional(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

const PolicyOptionsSchema = z.object({ policy: ToolPolicyKindSchema, ...GATE_OPTION_FIELDS }).strict();
export type PolicyOptions = z.infer<typeof PolicyOptionsSchema>;

// `files.*: allow` is short for `files.*: { policy: allow }`: read as that, so a wrong value is named at its field.
const PolicyFrontmatterSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { policy: value } : value),
  PolicyOptionsSchema,
);

/**
 * A policy as a request writes it (an organisation's floor): the same two forms, each as it is, so that the API's
 * document shows both.
 */
export const PolicyNotationSchema = z.union([
  ToolPolicyKindSchema.transform((policy): PolicyOptions => ({ policy })),
  PolicyOptionsSchema,
]);

export const ToolsFrontmatterSchema = z
  .object({
    servers: z
      .record(z.string(), ServerFrontmatterSchema)
      .refine((servers) => Object.keys(servers).length <= MAX_SERVERS, `too many servers: at most ${MAX_SERVERS}`)
      .default({}),
    policies: z
      .record(z.string(), PolicyFrontmatterSchema)
      .refine(
        (policies) => Object.keys(policies).length <= MAX_TOOL_POLICIES,
        `too many tool policy patterns: at most ${MAX_TOOL_POLICIES}`,
      )
      .default({}),
    questions_expire_after: DurationSchema.optional(),
  })
  .strict();
export type ToolsFrontmatter = z.infer<typeof ToolsFrontmatterSchema>;

/** A phase's fields about tools, beside its other fields. */
export const PHASE_TOOL_FIELDS = {
  tools: z
    .array(z.string().min(1))
    .min(1)
    .max(MAX_PHASE_TOOLS, `too many tools: at most ${MAX_PHASE_TOOLS} per phase`)
    .optional(),
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

/** What the servers an asset declares may be, besides what every asset is held to. */
export interface ServerRules {
  /** The instance's MCP servers by name, which `registry: <name>` names; the build has none. */
  registry: ReadonlyMap<string, McpServer>;
  /** A stored agent's text: it starts no program and names no environment variable. */
  stored: boolean;
}

/** The servers an asset declares, by name, whether or not each one passed its checks: a tool names its server so. */
export const declaredServers = (given: ToolsFrontmatter): ReadonlySet<string> => new Set(Object.keys(given.servers));

/**
 * The MCP servers an asset declares and the policies of their tools and of the project tools. Each server and each
 * policy is checked on its own.
 */
export function toolsDeclarationOf(source: AssetSource, given: ToolsFrontmatter, rules: ServerRules): ToolsDeclaration {
  const servers = Object.entries(given.servers).flatMap(([name, server]) =>
    check(source, () => [serverOf(source, ['tools', 'servers', name], name, server, rules)], []),
  );
  const declared = declaredServers(given);
  const policies = Object.entries(given.policies).flatMap(([pattern, policy]) =>
    check(source, () => [policyOf(source, ['tools', 'policies', pattern], pattern, policy, declared)], []),
  );
  const expiry = given.questions_expire_after;
  if (expiry === undefined) return { servers, policies };
  const questionExpiryS = durationSeconds(expiry);
  if (questionExpiryS > MAX_QUESTION_EXPIRY_S)
    fail(source, ['tools', 'questions_expire_after'], 'is longer than a day: a question holds its call open meanwhile');
  return { servers, policies, question_expiry_s: questionExpiryS };
}

export type ServerFrontmatter = z.infer<typeof ServerFrontmatterSchema>;

/**
 * An organisation's floor of tool policies (docs/tools.md#an-organisations-floor), written as `tools.policies` is and
 * checked alike, but for the servers: the floor covers every agent of the organisation, whatever servers they declare.
 */
export function floorPoliciesOf(
  source: AssetSource,
  at: FieldPath,
  given: Record<string, PolicyOptions>,
): ToolPolicy[] {
  return Object.entries(given).map(([pattern, policy]) => policyOf(source, [...at, pattern], pattern, policy, 'any'));
}

/** One MCP server as `tools.servers.<name>` declares it: a program over stdio, an HTTP endpoint, or one registered. */
export function serverOf(
  source: AssetSource,
  at: FieldPath,
  name: string,
  given: ServerFrontmatter,
  rules: ServerRules,
): McpServer {
  if (name === PROJECT_TOOLS_SERVER)
    fail(source, at, `"${PROJECT_TOOLS_SERVER}" is the name of the built-in project tools: give the server another`);
  if (!TOOL_NAME_PATTERN.test(name))
    fail(source, at, `"${name}" must be 1 to 64 letters, digits, _ and -, as tools are named <server>.<tool>`);
  if (given.registry !== undefined) return registeredServer(source, at, name, given, rules.registry);
  if (rules.stored) checkStoredServer(source, at, given);
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

const REGISTRY_ALONE = ['command', 'url', 'args', 'env', 'headers'] as const;

/** `registry: <name>`: the instance's server of that name as its administrator registered it, under the asset's key. */
function registeredServer(
  source: AssetSource,
  at: FieldPath,
  name: string,
  given: ServerFrontmatter,
  registry: ReadonlyMap<string, McpServer>,
): McpServer {
  for (const field of REGISTRY_ALONE) {
    if (given[field] !== undefined)
      fail(
        source,
        [...at, field],
        'does not go with registry: a registered server is used as the instance registered it, registry goes alone',
      );
  }
  const registered = registry.get(given.registry!);
  if (!registered)
    fail(source, [...at, 'registry'], `no MCP server named "${given.registry}" is registered on this instance`);
  return { ...registered, name };
}

/**
 * A stored agent is text a user wrote and the service keeps: it may reach an HTTP server, or name one of the
 * instance's registry, but not run a program on the server's machine nor read the service's environment.
 */
function checkStoredServer(source: AssetSource, at: FieldPath, given: ServerFrontmatter): void {
  if (given.command !== undefined)
    fail(
      source,
      [...at, 'command'],
      "a stored agent cannot start a program on the server: name a server of the instance's registry (registry: <name>)",
    );
  if (given.env !== undefined)
    fail(
      source,
      [...at, 'env'],
      "a stored agent names no environment variable: a server of the instance's registry (registry: <name>) brings what it needs",
    );
  if (given.headers !== undefined)
    fail(
      source,
      [...at, 'headers'],
      "a stored agent names no environment variable, and a header's value is read from one: a server of the instance's registry (registry: <name>) brings what it needs",
    );
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
  if (isServiceVariable(name)) {
    fail(
      source,
      at,
      `"${name}" is a variable the service reads itself (its settings, its secrets among them): a tool's server never gets it`,
    );
  }
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

/** The servers a pattern may name: those an asset declares, or `any` (an organisation's floor). */
type DeclaredServers = ReadonlySet<string> | 'any';

function policyOf(
  source: AssetSource,
  at: FieldPath,
  pattern: string,
  given: PolicyOptions,
  declared: DeclaredServers,
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
  declared: DeclaredServers,
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
  } else if (declared !== 'any' && !declared.has(server)) {
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
