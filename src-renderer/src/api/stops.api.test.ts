import { StopDecisionBodySchema } from '@contracts/stops';
import { describe, expect, it } from 'vitest';
import { stopDecisionBody } from './stops.api';

describe('a decision as the one request the server takes', () => {
  it('names the round shown, sends an edit as an approval with its edits, and leaves an empty reason out', () => {
    expect(stopDecisionBody({ kind: 'approve', reason: '  ' }, 1)).toEqual({ decision: 'approve', round: 1 });
    expect(stopDecisionBody({ kind: 'edit', edits: { analysis: 'new' }, reason: 'tone ' }, 2)).toEqual({
      decision: 'approve',
      round: 2,
      reason: 'tone',
      edits: { analysis: 'new' },
    });
    expect(stopDecisionBody({ kind: 'respond', response: 'more on tests' }, 1)).toEqual({
      decision: 'respond',
      round: 1,
      response: 'more on tests',
    });
    expect(stopDecisionBody({ kind: 'reject', reason: 'no' }, 3)).toEqual({
      decision: 'reject',
      round: 3,
      reason: 'no',
    });
  });

  it('sends edited arguments and a grant for the thread only when given', () => {
    expect(
      stopDecisionBody({ kind: 'approve', arguments: { path: 'a.md' }, allowForThread: true, reason: 'ok ' }, 1),
    ).toEqual({ decision: 'approve', round: 1, reason: 'ok', arguments: { path: 'a.md' }, allow_for_thread: true });
    expect(stopDecisionBody({ kind: 'approve', allowForThread: false }, 1)).toEqual({ decision: 'approve', round: 1 });
  });

  it("builds bodies the server's own schema accepts, and its schema refuses a field the decision does not take", () => {
    for (const body of [
      stopDecisionBody({ kind: 'edit', edits: { a: 'b' } }, 1),
      stopDecisionBody({ kind: 'respond', response: 'x' }, 1),
      stopDecisionBody({ kind: 'approve', arguments: { a: 1 }, allowForThread: true }, 2),
      stopDecisionBody({ kind: 'reject', reason: 'no' }, 1),
    ])
      expect(StopDecisionBodySchema.safeParse(body).success).toBe(true);
    expect(StopDecisionBodySchema.safeParse({ decision: 'reject', edits: { a: 'b' } }).success).toBe(false);
    expect(StopDecisionBodySchema.safeParse({ decision: 'respond' }).success).toBe(false);
    expect(StopDecisionBodySchema.safeParse({ decision: 'approve', round: 0 }).success).toBe(false);
  });
});
