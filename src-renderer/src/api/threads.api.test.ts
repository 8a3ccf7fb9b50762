import { ApproveBodySchema, RespondBodySchema } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import { decisionRequest } from './threads.api';

describe('a decision as the request the server takes', () => {
  it('posts an edit to approve with the edits, a respond to respond, and leaves an empty reason out', () => {
    expect(decisionRequest({ kind: 'approve', reason: '  ' })).toEqual({ action: 'approve', body: {} });
    expect(decisionRequest({ kind: 'edit', edits: { analysis: 'new' }, reason: 'tone ' })).toEqual({
      action: 'approve',
      body: { reason: 'tone', edits: { analysis: 'new' } },
    });
    expect(decisionRequest({ kind: 'respond', response: 'more on tests' })).toEqual({
      action: 'respond',
      body: { response: 'more on tests' },
    });
    expect(decisionRequest({ kind: 'reject', reason: 'no' })).toEqual({ action: 'reject', body: { reason: 'no' } });
  });

  it("builds bodies the server's own schemas accept", () => {
    expect(ApproveBodySchema.safeParse(decisionRequest({ kind: 'edit', edits: { a: 'b' } }).body).success).toBe(true);
    expect(RespondBodySchema.safeParse(decisionRequest({ kind: 'respond', response: 'x' }).body).success).toBe(true);
  });
});
