import { ReasonBodySchema } from '@contracts/common';
import { ToolApproveBodySchema, ToolRespondBodySchema } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import { toolDecisionRequest } from './approvals.api';

describe('a decision on a tool call as the request the server takes', () => {
  it('sends edited arguments and a grant for the thread only when given, and leaves an empty reason out', () => {
    expect(toolDecisionRequest({ kind: 'approve', reason: ' ' })).toEqual({ action: 'approve', body: {} });
    expect(
      toolDecisionRequest({ kind: 'approve', arguments: { path: 'a.md' }, allowForThread: true, reason: 'ok ' }),
    ).toEqual({ action: 'approve', body: { reason: 'ok', arguments: { path: 'a.md' }, allow_for_thread: true } });
    expect(toolDecisionRequest({ kind: 'approve', allowForThread: false })).toEqual({ action: 'approve', body: {} });
    expect(toolDecisionRequest({ kind: 'respond', response: '42' })).toEqual({
      action: 'respond',
      body: { response: '42' },
    });
    expect(toolDecisionRequest({ kind: 'reject', reason: 'not that file' })).toEqual({
      action: 'reject',
      body: { reason: 'not that file' },
    });
  });

  it("builds bodies the server's own schemas accept", () => {
    const approve = toolDecisionRequest({ kind: 'approve', arguments: { a: 1 }, allowForThread: true }).body;
    expect(ToolApproveBodySchema.safeParse(approve).success).toBe(true);
    expect(ToolRespondBodySchema.safeParse(toolDecisionRequest({ kind: 'respond', response: 'x' }).body).success).toBe(
      true,
    );
    expect(ReasonBodySchema.safeParse(toolDecisionRequest({ kind: 'reject', reason: 'no' }).body).success).toBe(true);
  });
});
