import { DEFAULT_GATE_POLICY, type GatePolicy } from '../contracts/gate-policy';
import { PROJECT_TOOLS_SERVER, type ToolDefinition, type ToolPolicy, type ToolPolicyKind } from '../contracts/tools';

/** What the asset's policies say of one tool: run it, ask a person first (with a gate's options), or never offer it. */
export interface ResolvedPolicy {
  kind: ToolPolicyKind;
  ask: GatePolicy;
}

/** Whether a tool pattern (`server.tool` or `server.*`) names the tool. */
export function patternNames(pattern: string, tool: Pick<ToolDefinition, 'server' | 'tool'>): boolean {
  return pattern === `${tool.server}.${tool.tool}` || pattern === `${tool.server}.*`;
}

/**
 * The policy of a tool: the asset's pattern for it by name, else its server's `*`, else the default, which fails
 * closed: a tool no policy names is asked, except the built-in project tools that only read (docs/tools.md).
 */
export function resolvePolicy(policies: readonly ToolPolicy[], tool: ToolDefinition): ResolvedPolicy {
  const named =
    policies.find((p) => p.tool === `${tool.server}.${tool.tool}`) ??
    policies.find((p) => p.tool === `${tool.server}.*`);
  if (named) return { kind: named.policy, ask: named.ask ?? DEFAULT_GATE_POLICY };
  const readsOnly = tool.server === PROJECT_TOOLS_SERVER && tool.annotations.read_only;
  return { kind: readsOnly ? 'allow' : 'ask', ask: DEFAULT_GATE_POLICY };
}
