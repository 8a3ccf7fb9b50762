import {
  ApprovalItemSchema,
  RunAcceptedSchema,
  ToolGrantSchema,
  type ToolApproveBody,
  type ToolRespondBody,
} from '@contracts/runs';
import { z } from 'zod';
import { api } from './http';

/**
 * What a person decides on a tool call a run waits at: run it (with the arguments edited, when `arguments` is given;
 * and for the rest of the thread without asking, with `allowForThread`), answer in the tool's place, or refuse it.
 * The reason is optional; a rejection's reason goes back to the model.
 */
export type ToolDecisionChoice =
  | { kind: 'approve'; arguments?: Record<string, unknown>; allowForThread?: boolean; reason?: string }
  | { kind: 'respond'; response: string; reason?: string }
  | { kind: 'reject'; reason?: string };

/** The endpoint and body of a decision on a tool call. */
export type ToolDecisionRequest =
  | { action: 'approve'; body: ToolApproveBody }
  | { action: 'respond'; body: ToolRespondBody }
  | { action: 'reject'; body: { reason?: string } };

/** The request a decision on a tool call is sent as; an empty reason is left out rather than recorded as one. */
export function toolDecisionRequest(choice: ToolDecisionChoice): ToolDecisionRequest {
  const reason = choice.reason?.trim() ? { reason: choice.reason.trim() } : {};
  switch (choice.kind) {
    case 'approve':
      return {
        action: 'approve',
        body: {
          ...reason,
          ...(choice.arguments ? { arguments: choice.arguments } : {}),
          ...(choice.allowForThread ? { allow_for_thread: true } : {}),
        },
      };
    case 'respond':
      return { action: 'respond', body: { ...reason, response: choice.response } };
    case 'reject':
      return { action: 'reject', body: reason };
  }
}

const decided = (threadId: string, callId: string, action: ToolDecisionRequest['action'], body: unknown) =>
  api(`/threads/${threadId}/tool-calls/${encodeURIComponent(callId)}/${action}`, {
    method: 'POST',
    body,
    schema: RunAcceptedSchema,
  });

export const approvalsApi = {
  /** The gates and tool calls waiting for the caller to decide, in every project they may decide in, oldest first. */
  list: () => api('/approvals', { schema: z.array(ApprovalItemSchema) }),
  /** The tools allowed for the rest of a thread by an approval, and the grants revoked since, oldest first. */
  toolGrants: (threadId: string) => api(`/threads/${threadId}/tool-grants`, { schema: z.array(ToolGrantSchema) }),
  /** The tool's next calls on the thread ask again. */
  revokeToolGrant: (threadId: string, grantId: string) =>
    api(`/threads/${threadId}/tool-grants/${grantId}/revoke`, { method: 'POST', schema: ToolGrantSchema }),
  /** Runs the call, with `arguments` instead of the model's when given (400 when they do not fit the tool's schema). */
  approveToolCall: (threadId: string, callId: string, body: ToolApproveBody) =>
    decided(threadId, callId, 'approve', body),
  /** The call is not run; the reason goes back to the model as the tool's answer. */
  rejectToolCall: (threadId: string, callId: string, body: { reason?: string }) =>
    decided(threadId, callId, 'reject', body),
  /** The call is not run; the model reads `response` as the tool's answer. */
  respondToToolCall: (threadId: string, callId: string, body: ToolRespondBody) =>
    decided(threadId, callId, 'respond', body),
  /**
   * One person's decision on a tool call. The answer says where to follow the run from, or, when the call needs
   * more approvals than this one, the approvals so far.
   */
  decideToolCall: (threadId: string, callId: string, choice: ToolDecisionChoice) => {
    const request = toolDecisionRequest(choice);
    switch (request.action) {
      case 'approve':
        return approvalsApi.approveToolCall(threadId, callId, request.body);
      case 'respond':
        return approvalsApi.respondToToolCall(threadId, callId, request.body);
      case 'reject':
        return approvalsApi.rejectToolCall(threadId, callId, request.body);
    }
  },
};
