import { DEFAULT_GATE_POLICY, type GateExpiry, type GatePolicy } from '../contracts/gate-policy';
import { ROLES } from '../contracts/tenancy';
import {
  PROJECT_TOOLS_SERVER,
  type PolicySource,
  type ToolDefinition,
  type ToolPolicy,
  type ToolPolicyKind,
} from '../contracts/tools';

/**
 * What applies when a phase calls one tool: run it, ask a person first (with a gate's options), or never offer it;
 * and where that came from: the agent's policies, its organisation's floor, or the default.
 */
export interface ResolvedPolicy {
  kind: ToolPolicyKind;
  ask: GatePolicy;
  source: PolicySource;
}

/** Whether a tool pattern (`server.tool` or `server.*`) names the tool. */
export function patternNames(pattern: string, tool: Pick<ToolDefinition, 'server' | 'tool'>): boolean {
  return pattern === `${tool.server}.${tool.tool}` || pattern === `${tool.server}.*`;
}

/** The policy that names the tool: by its name, else its server's `*`. */
const namedIn = (policies: readonly ToolPolicy[], tool: ToolDefinition): ToolPolicy | undefined =>
  policies.find((p) => p.tool === `${tool.server}.${tool.tool}`) ?? policies.find((p) => p.tool === `${tool.server}.*`);

/**
 * The policy of a tool: the asset's pattern for it by name, else its server's `*`, else the default, which fails
 * closed: a tool no policy names is asked, except the built-in project tools that only read (docs/tools.md). The
 * organisation's `floor`, where one of its patterns names the tool (by name before `*` too), is a floor: the stricter
 * of it and the agent's (or the default) applies, and `source` is `organisation` when the floor made it stricter.
 */
export function resolvePolicy(
  policies: readonly ToolPolicy[],
  tool: ToolDefinition,
  floor: readonly ToolPolicy[] = [],
): ResolvedPolicy {
  const own = namedIn(policies, tool);
  const readsOnly = tool.server === PROJECT_TOOLS_SERVER && tool.annotations.read_only;
  const agent: ResolvedPolicy = own
    ? { kind: own.policy, ask: own.ask ?? DEFAULT_GATE_POLICY, source: 'agent' }
    : { kind: readsOnly ? 'allow' : 'ask', ask: DEFAULT_GATE_POLICY, source: 'default' };
  const organisation = namedIn(floor, tool);
  if (!organisation) return agent;
  return stricter(agent, { kind: organisation.policy, ask: organisation.ask ?? DEFAULT_GATE_POLICY });
}

const KIND_STRICTNESS: Record<ToolPolicyKind, number> = { allow: 0, ask: 1, deny: 2 };

/** `deny` over `ask` over `allow`; of two that ask, each gate option at its stricter (stricterAsk). */
function stricter(agent: ResolvedPolicy, floor: Omit<ResolvedPolicy, 'source'>): ResolvedPolicy {
  const byKind = KIND_STRICTNESS[floor.kind] - KIND_STRICTNESS[agent.kind];
  if (byKind > 0) return { ...floor, source: 'organisation' };
  if (byKind < 0 || agent.kind !== 'ask') return agent;
  const ask = stricterAsk(agent.ask, floor.ask);
  const same =
    ask.decide_role === agent.ask.decide_role &&
    ask.approvals === agent.ask.approvals &&
    ask.expiry === agent.ask.expiry;
  return same ? agent : { kind: 'ask', ask, source: 'organisation' };
}

/** The higher decide_role, the more approvals, the stricter expiry (expiryStrictness). */
function stricterAsk(a: GatePolicy, b: GatePolicy): GatePolicy {
  return {
    decide_role: ROLES.indexOf(a.decide_role) <= ROLES.indexOf(b.decide_role) ? a.decide_role : b.decide_role,
    approvals: Math.max(a.approvals, b.approvals),
    expiry: expiryStrictness(a.expiry) <= expiryStrictness(b.expiry) ? a.expiry : b.expiry,
  };
}

/**
 * Where an expiry stands from strictest (lowest) to loosest. One that rejects only ends the wait, so nothing runs
 * unless someone approved in time: the sooner, the stricter, and any is stricter than waiting forever (null). One
 * that approves runs the call with nobody's approval: looser than waiting forever, and the sooner, the looser.
 */
function expiryStrictness(expiry: GateExpiry | null): number {
  if (!expiry) return 0;
  return expiry.action === 'approve' ? 1 / expiry.after_s : -1 / expiry.after_s;
}
