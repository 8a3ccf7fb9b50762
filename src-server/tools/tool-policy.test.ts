import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_POLICY } from '../contracts/gate-policy';
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
    expect(resolvePolicy(policies, tool('files', 'write_file', false))).toEqual({ kind: 'ask', ask: maintainers });
    expect(resolvePolicy(policies, tool('files', 'read_file', true)).kind).toBe('allow');
    expect(resolvePolicy(policies, tool('tracker', 'delete_issue', false)).kind).toBe('deny');
  });

  it('asks for what no policy names, even a tool its server calls read-only', () => {
    expect(resolvePolicy(policies, tool('tracker', 'list_issues', true))).toEqual({
      kind: 'ask',
      ask: DEFAULT_GATE_POLICY,
    });
  });

  it("lets the built-in project tools that only read run, and asks before the project's write_file", () => {
    expect(resolvePolicy([], tool('project', 'git_diff', true)).kind).toBe('allow');
    expect(resolvePolicy([], tool('project', 'write_file', false)).kind).toBe('ask');
  });
});
