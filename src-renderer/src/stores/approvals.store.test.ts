import type { ApprovalItem } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import { itemKey, waitingFor, waitsWhile } from './approvals.store';
import { pendingWrite } from './pending-tool-call.fixture';

const item = (gate: string, by: string[]): ApprovalItem => ({
  run_id: '11111111-1111-4111-8111-111111111111',
  thread_id: '22222222-2222-4222-8222-222222222222',
  agent: 'change-review',
  project: { id: '00000000-0000-4000-8000-000000000003', name: 'Default' },
  message: 'Review: rename the loader',
  stop: { kind: 'gate', id: '11111111-1111-4111-8111-111111111111:9', round: 1, node: gate, tool_call: null },
  sent_to: [],
  gate,
  question: 'Publish?',
  excerpt: 'The analysis',
  context: { analysis: 'The analysis' },
  required_context: ['analysis'],
  waiting_since: '2026-01-01T12:00:00Z',
  expires_at: null,
  on_expiry: null,
  decide_role: 'member',
  approvals: { needed: 2, given: by.length, by: by.map((id) => ({ id, name: id, at: '2026-01-01T12:01:00Z' })) },
});

describe('the approvals inbox', () => {
  it('counts the gates still waiting for this person: not those they approved already', () => {
    const items = [item('a', []), item('b', ['u-ada']), item('c', ['u-ben'])];
    expect(waitingFor(items, 'u-ada').map((i) => i.gate)).toEqual(['a', 'c']);
    expect(waitingFor(items, null)).toHaveLength(3);
  });

  it('tells items apart by run and gate, and the calls of one phase by their call', () => {
    expect(itemKey(item('gate', []))).toBe('11111111-1111-4111-8111-111111111111:gate');
    const call = (place: number): ApprovalItem => ({
      ...item('intake', []),
      tool_call: pendingWrite(`11111111-1111-4111-8111-111111111111:intake:1:0:${place}`),
    });
    expect(itemKey(call(0))).not.toBe(itemKey(call(1)));
    expect(itemKey(call(1))).toBe(
      '11111111-1111-4111-8111-111111111111:intake:11111111-1111-4111-8111-111111111111:intake:1:0:1',
    );
  });

  it("names a tool server's question by its stop, and keeps it while its run goes on running", () => {
    const stop = { kind: 'question' as const, id: '11111111-1111-4111-8111-111111111111:12', round: 1, node: 'intake' };
    const question: ApprovalItem = { ...item('intake', []), stop: { ...stop, tool_call: null } };
    expect(itemKey(question)).toBe('question:11111111-1111-4111-8111-111111111111:12');
    expect(waitsWhile(question, 'running')).toBe(true);
    expect(waitsWhile(question, 'completed')).toBe(false);
    expect(waitsWhile(item('gate', []), 'running')).toBe(false);
    expect(waitsWhile(item('gate', []), 'waiting_approval')).toBe(true);
  });
});
