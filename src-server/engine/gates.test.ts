import { describe, expect, it } from 'vitest';
import type { PendingGate } from '../contracts/runs';
import { expire, settle, type PersonDecision } from './gates';
import type { StopDecision } from '../storage/types';

const by = (name: string) => ({ id: name.toLowerCase(), name });
const person = (kind: PersonDecision['kind'], name: string, extra: Partial<PersonDecision> = {}): PersonDecision => ({
  kind,
  by: by(name),
  role: 'member',
  reason: null,
  edits: null,
  response: null,
  routeTo: null,
  toolCall: null,
  ...extra,
});
const recorded = (kind: StopDecision['kind'], name: string, round = 0, edits: Record<string, string> | null = null) =>
  ({
    kind,
    decidedBy: by(name),
    round,
    edits,
    arguments: null,
    argumentsSha256: null,
    decidedAt: new Date(),
  }) satisfies StopDecision;

describe('what a decision does at a gate', () => {
  it('one approval resumes a gate that needs one', () => {
    const settled = settle([], person('approve', 'Ann', { reason: 'fine' }), 1);
    expect(settled).toMatchObject({
      outcome: 'resume',
      decision: { kind: 'approve', reason: 'fine', deciders: ['Ann'] },
      approvals: { needed: 1, given: 1 },
    });
  });

  it('a gate that needs two waits for a second person, and counts one person once', () => {
    expect(settle([], person('approve', 'Ann'), 2)).toMatchObject({ outcome: 'waiting', approvals: { given: 1 } });
    expect(settle([recorded('approve', 'Ann')], person('approve', 'Ann'), 2)).toEqual({ outcome: 'duplicate' });
    expect(settle([recorded('approve', 'Ann')], person('approve', 'Bob'), 2)).toMatchObject({
      outcome: 'resume',
      decision: { kind: 'approve', deciders: ['Ann', 'Bob'] },
    });
  });

  it('an edit opens a new round: the approvals before it were of other text', () => {
    const edit = person('edit', 'Ada', { edits: { analysis: 'rewritten' } });
    const settled = settle([recorded('approve', 'Ann')], edit, 2);
    expect(settled).toMatchObject({
      outcome: 'waiting',
      record: { round: 1 },
      approvals: { given: 1, by: [{ name: 'Ada' }] },
    });
    // Ann may approve the rewritten text, and that completes the round.
    const after = settle(
      [recorded('approve', 'Ann'), recorded('edit', 'Ada', 1, { analysis: 'rewritten' })],
      person('approve', 'Ann'),
      2,
    );
    expect(after).toMatchObject({
      outcome: 'resume',
      decision: { kind: 'edit', edits: { analysis: 'rewritten' }, deciders: ['Ada', 'Ann'] },
    });
  });

  it('every edit at the stop applies, a later one over an earlier one', () => {
    const before = [recorded('edit', 'Ann', 1, { analysis: 'first', intake: 'kept' })];
    const settled = settle(before, person('edit', 'Bob', { edits: { analysis: 'second' } }), 1);
    expect(settled).toMatchObject({ decision: { edits: { analysis: 'second', intake: 'kept' } } });
  });

  it('a respond sends the run back at once, a reject ends it at once, whatever the approvals so far', () => {
    expect(
      settle([recorded('approve', 'Ann')], person('respond', 'Bob', { response: 'shorter', routeTo: 'analysis' }), 2),
    ).toMatchObject({
      outcome: 'resume',
      decision: { kind: 'respond', response: 'shorter', to: 'analysis', deciders: ['Bob'] },
    });
    expect(settle([recorded('approve', 'Ann')], person('reject', 'Bob', { reason: 'no' }), 2)).toMatchObject({
      outcome: 'resume',
      decision: { kind: 'reject', reason: 'no', deciders: ['Bob'] },
    });
  });

  it("an expiry decides what the gate's options say, with the wait in its reason", () => {
    const gate = (action: 'approve' | 'reject' | 'route', after_s: number): PendingGate => ({
      node: 'gate',
      question: 'Publish?',
      required_context: [],
      context: {},
      on_expiry: { action, target: action === 'route' ? 'output' : null, after_s },
    });
    expect(expire(gate('reject', 172800)).decision).toEqual({
      kind: 'expire',
      outcome: 'reject',
      reason: 'nobody decided the gate after 2d',
      to: null,
      deciders: ['expiry'],
    });
    expect(expire(gate('route', 5400)).decision).toMatchObject({
      outcome: 'route',
      to: 'output',
      reason: 'nobody decided the gate after 90m',
    });
    expect(expire(gate('approve', 7)).record).toMatchObject({
      kind: 'expire',
      decidedBy: { id: null, name: 'expiry' },
      outcome: 'approve',
    });
  });
});
