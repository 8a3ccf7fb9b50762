import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_POLICY, type GatePolicy } from '../contracts/gate-policy';
import type { ToolDefinition, ToolPolicy } from '../contracts/tools';
import { resolvePolicy } from './tool-policy';

const tool = (server: string, name: string, readOnly: boolean): ToolDefinition => ({
  name: `${server}.${name}`,
  server,
  tool: name,
  description: '',
  inputSchema: { type: 'object' },
  annotations: { read_only: readOnly, idempotent: readOnly, destructive: !readOnly },
});

const maintainers = { decide_role: 'owner' as const, approvals: 2, expiry: null };

describe('the policy of a tool', () => {
  const policies: ToolPolicy[] = [
    { tool: 'files.*', policy: 'allow', ask: null },
    { tool: 'files.write_file', policy: 'ask', ask: maintainers },
    { tool: 'tracker.delete_issue', policy: 'deny', ask: null },
  ];

  it('takes the pattern that names the tool over its server-wide one', () => {
    expect(resolvePolicy(policies, tool('files', 'write_file', false))).toEqual({
      kind: 'ask',
      ask: maintainers,
      source: 'agent',
    });
    expect(resolvePolicy(policies, tool('files', 'read_file', true)).kind).toBe('allow');
    expect(resolvePolicy(policies, tool('tracker', 'delete_issue', false)).kind).toBe('deny');
  });

  it('asks for what no policy names, even a tool its server calls read-only', () => {
    expect(resolvePolicy(policies, tool('tracker', 'list_issues', true))).toEqual({
      kind: 'ask',
      ask: DEFAULT_GATE_POLICY,
      source: 'default',
    });
  });

  it("lets the built-in project tools that only read run, and asks before the project's write_file", () => {
    expect(resolvePolicy([], tool('project', 'git_diff', true)).kind).toBe('allow');
    expect(resolvePolicy([], tool('project', 'write_file', false)).kind).toBe('ask');
  });
});

describe("an organisation's floor", () => {
  const ask = (options: Partial<GatePolicy> = {}): ToolPolicy['ask'] => ({ ...DEFAULT_GATE_POLICY, ...options });
  const agentAsks = (options: Partial<GatePolicy>): ToolPolicy[] => [
    { tool: 'files.write_file', policy: 'ask', ask: ask(options) },
  ];
  const floorAsks = (options: Partial<GatePolicy>): ToolPolicy[] => [
    { tool: 'files.*', policy: 'ask', ask: ask(options) },
  ];
  const write = tool('files', 'write_file', false);
  const expiry = (action: 'reject' | 'approve', after_s: number) => ({ after_s, action, target: null });

  it('is not loosened by an agent: deny over ask over allow, where either names the tool', () => {
    const agentAllows: ToolPolicy[] = [{ tool: 'files.*', policy: 'allow', ask: null }];
    expect(resolvePolicy(agentAllows, write, floorAsks({}))).toEqual({
      kind: 'ask',
      ask: DEFAULT_GATE_POLICY,
      source: 'organisation',
    });
    const floorDenies: ToolPolicy[] = [{ tool: 'files.write_file', policy: 'deny', ask: null }];
    expect(resolvePolicy(agentAsks({}), write, floorDenies)).toMatchObject({ kind: 'deny', source: 'organisation' });
    const floorAllows: ToolPolicy[] = [{ tool: 'files.*', policy: 'allow', ask: null }];
    expect(resolvePolicy(agentAsks({}), write, floorAllows)).toMatchObject({ kind: 'ask', source: 'agent' });
  });

  it('takes its pattern by name before its server-wide one, as for an agent', () => {
    const floor: ToolPolicy[] = [
      { tool: 'files.*', policy: 'deny', ask: null },
      { tool: 'files.write_file', policy: 'ask', ask: ask({ decide_role: 'admin' }) },
    ];
    expect(resolvePolicy([], write, floor)).toEqual({
      kind: 'ask',
      ask: ask({ decide_role: 'admin' }),
      source: 'organisation',
    });
    expect(resolvePolicy([], tool('files', 'read_file', true), floor).kind).toBe('deny');
  });

  it('applies where the default does: stricter than the default, it is the policy', () => {
    const floorDenies: ToolPolicy[] = [{ tool: 'project.*', policy: 'deny', ask: null }];
    expect(resolvePolicy([], tool('project', 'read_file', true), floorDenies)).toMatchObject({
      kind: 'deny',
      source: 'organisation',
    });
    const floorAllows: ToolPolicy[] = [{ tool: 'project.*', policy: 'allow', ask: null }];
    expect(resolvePolicy([], tool('project', 'write_file', false), floorAllows)).toMatchObject({
      kind: 'ask',
      source: 'default',
    });
  });

  it('of two that ask, takes the higher role, the more approvals and the stricter expiry of each', () => {
    expect(
      resolvePolicy(agentAsks({ decide_role: 'owner', approvals: 1 }), write, floorAsks({ approvals: 3 })),
    ).toEqual({
      kind: 'ask',
      ask: { decide_role: 'owner', approvals: 3, expiry: null },
      source: 'organisation',
    });
    expect(resolvePolicy(agentAsks({ decide_role: 'admin' }), write, floorAsks({ decide_role: 'owner' }))).toEqual({
      kind: 'ask',
      ask: ask({ decide_role: 'admin' }),
      source: 'agent',
    });
  });

  it('holds an expiry that rejects sooner stricter than one later, than none, and than one that approves', () => {
    const expiryOf = (agent: GatePolicy['expiry'], floor: GatePolicy['expiry']) =>
      resolvePolicy(agentAsks({ expiry: agent }), write, floorAsks({ expiry: floor })).ask.expiry;
    expect(expiryOf(expiry('reject', 3600), expiry('reject', 60))).toEqual(expiry('reject', 60));
    expect(expiryOf(null, expiry('reject', 86400))).toEqual(expiry('reject', 86400));
    expect(expiryOf(expiry('reject', 86400), null)).toEqual(expiry('reject', 86400));
    // One that approves runs the call with nobody's approval: waiting forever is stricter, and so is approving later.
    expect(expiryOf(expiry('approve', 60), null)).toBeNull();
    expect(expiryOf(expiry('approve', 60), expiry('approve', 3600))).toEqual(expiry('approve', 3600));
    expect(expiryOf(expiry('approve', 3600), expiry('reject', 86400))).toEqual(expiry('reject', 86400));
  });
});
