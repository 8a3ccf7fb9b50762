import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import {
  ApprovalItemSchema,
  ApproveBodySchema,
  GateDecisionRecordSchema,
  RejectBodySchema,
  RespondBodySchema,
  RunAcceptedSchema,
  ToolApproveBodySchema,
  ToolGrantSchema,
  ToolRespondBodySchema,
} from '../contracts/runs';
import { StopDecisionBodySchema, StopIdSchema } from '../contracts/stops';
import { AnswerQuestionBodySchema, QuestionAnsweredSchema } from '../contracts/tool-questions';
import type { Api } from './api';
import type { AppDeps } from './deps';

const GateParams = z.object({ id: UuidSchema, gate: z.string().min(1).max(100) });
/** A call's id: `<run>:<node>:<visit>:<turn>:<place>` (docs/tools.md#exactly-once). */
const ToolCallParams = z.object({
  id: UuidSchema,
  call_id: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[0-9a-f-]{36}:[a-z][a-z0-9_-]*:\d+:\d+:(\d+|publish)$/, 'must be a tool call id'),
});

const DECIDED = {
  description:
    'The decision is recorded. With status `running` the run resumed: follow it at `stream_url` (GET ' +
    '/runs/{id}/stream after the gate_waiting event). With status `waiting_approval` the gate needs more approvals ' +
    '(see `approvals`) and the run keeps waiting. The answer is JSON whatever the Accept header says.',
  schema: RunAcceptedSchema,
};

const DECISION_ERRORS = {
  403: "below the gate's role on the thread's project (member unless the gate declares one) (forbidden)",
  404: "no such thread, or the thread's agent has no gate of that name (not_found)",
  409: 'the gate is not pending, was already decided, changed since the round named (or, naming none, since its first), the caller already approved it, or its checkpoint is gone (conflict)',
};

const TOOL_DECISION_ERRORS = {
  403: "below the role the tool's policy names on the thread's project (member unless it names one) (forbidden)",
  404: 'no such thread, or no tool call of that id waits or was decided on it (not_found)',
  409: 'the call is not pending, was already decided, changed since the round named (or, naming none, since its first), the caller already approved it, or its checkpoint is gone (conflict)',
};

/**
 * Approval gates (docs/approvals.md): the specification's approve and reject, with an edit as an approve that carries
 * `edits`; respond as an endpoint of its own beside them, since it neither approves nor rejects; the record of
 * decisions; and the inbox of gates waiting for the caller.
 */
export function approvalRoutes(api: Api, { approvals }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/threads/{id}/gates/{gate}/approve',
    operationId: 'approveGate',
    tag: 'approvals',
    summary:
      'Approve a pending gate, or edit it (approve with `edits`): once it has its approvals the run resumes from its checkpoint',
    params: GateParams,
    body: ApproveBodySchema,
    idempotent: true,
    errors: {
      ...DECISION_ERRORS,
      400: 'invalid request, or `edits` names a phase the gate does not show (invalid_request)',
    },
    responses: { 202: DECIDED },
    handler: ({ params, body, ctx }) =>
      approvals.decide(
        ctx.principal,
        { thread: params.id, gate: params.gate, round: body.round },
        { decision: 'approve', reason: body.reason ?? null, ...(body.edits ? { edits: body.edits } : {}) },
      ),
  });

  api.route({
    method: 'post',
    path: '/threads/{id}/gates/{gate}/reject',
    operationId: 'rejectGate',
    tag: 'approvals',
    summary: 'Reject a pending gate: the run ends without running downstream nodes',
    params: GateParams,
    body: RejectBodySchema,
    idempotent: true,
    errors: DECISION_ERRORS,
    responses: { 202: DECIDED },
    handler: ({ params, body, ctx }) =>
      approvals.decide(
        ctx.principal,
        { thread: params.id, gate: params.gate, round: body.round },
        { decision: 'reject', reason: body.reason ?? null },
      ),
  });

  api.route({
    method: 'post',
    path: '/threads/{id}/gates/{gate}/respond',
    operationId: 'respondToGate',
    tag: 'approvals',
    summary:
      'Send a pending gate back: the phase before it runs again with `response` as feedback, and the gate is reached again',
    params: GateParams,
    body: RespondBodySchema,
    idempotent: true,
    errors: { ...DECISION_ERRORS, 400: 'invalid request, or the gate has no phase before it (invalid_request)' },
    responses: { 202: DECIDED },
    handler: ({ params, body, ctx }) =>
      approvals.decide(
        ctx.principal,
        { thread: params.id, gate: params.gate, round: body.round },
        { decision: 'respond', reason: body.reason ?? null, response: body.response },
      ),
  });

  api.route({
    method: 'post',
    path: '/threads/{id}/tool-calls/{call_id}/approve',
    operationId: 'approveToolCall',
    tag: 'approvals',
    summary:
      'Approve the tool call a run waits at, or edit it (approve with `arguments`): once it has its approvals it runs with exactly the approved arguments',
    params: ToolCallParams,
    body: ToolApproveBodySchema,
    idempotent: true,
    errors: {
      ...TOOL_DECISION_ERRORS,
      400: "invalid request, or `arguments` do not fit the tool's input schema (invalid_request)",
    },
    responses: { 202: DECIDED },
    handler: ({ params, body, ctx }) =>
      approvals.decide(
        ctx.principal,
        { thread: params.id, toolCall: params.call_id, round: body.round },
        {
          decision: 'approve',
          reason: body.reason ?? null,
          ...(body.arguments ? { arguments: body.arguments } : {}),
          ...(body.allow_for_thread ? { allowForThread: true } : {}),
        },
      ),
  });

  api.route({
    method: 'post',
    path: '/threads/{id}/tool-calls/{call_id}/reject',
    operationId: 'rejectToolCall',
    tag: 'approvals',
    summary:
      "Reject the tool call a run waits at: it is not run, and `reason` goes back to the model as the tool's answer",
    params: ToolCallParams,
    body: RejectBodySchema,
    idempotent: true,
    errors: TOOL_DECISION_ERRORS,
    responses: { 202: DECIDED },
    handler: ({ params, body, ctx }) =>
      approvals.decide(
        ctx.principal,
        { thread: params.id, toolCall: params.call_id, round: body.round },
        { decision: 'reject', reason: body.reason ?? null },
      ),
  });

  api.route({
    method: 'post',
    path: '/threads/{id}/tool-calls/{call_id}/respond',
    operationId: 'respondToToolCall',
    tag: 'approvals',
    summary: "Answer in place of the tool: the call is not run, and the model reads `response` as the tool's answer",
    params: ToolCallParams,
    body: ToolRespondBodySchema,
    idempotent: true,
    errors: TOOL_DECISION_ERRORS,
    responses: { 202: DECIDED },
    handler: ({ params, body, ctx }) =>
      approvals.decide(
        ctx.principal,
        { thread: params.id, toolCall: params.call_id, round: body.round },
        { decision: 'respond', reason: body.reason ?? null, response: body.response },
      ),
  });

  api.route({
    method: 'post',
    path: '/stops/{stop_id}/decision',
    operationId: 'decideStop',
    tag: 'approvals',
    summary:
      "Decide a stop, whatever the run waits at (a gate or a tool call), by the id the inbox, the run and webhooks give it: approve (with `edits` of a gate's text or a tool call's `arguments`), respond or reject, naming the `round` read",
    params: z.object({ stop_id: StopIdSchema }),
    body: StopDecisionBodySchema,
    idempotent: true,
    errors: {
      400: 'invalid request: a field the decision does not take, `edits` at a tool call or `arguments` at a gate, or ones that do not fit (invalid_request)',
      403: "below the stop's role on the thread's project (member unless the gate or the tool's policy names one) (forbidden)",
      404: 'no such stop, or one the caller may not see (not_found)',
      409: 'the stop is not pending (decided, expired, cancelled), it changed since the round named (an approver edited it), the caller already approved it, or its checkpoint is gone (conflict)',
    },
    responses: { 202: DECIDED },
    handler: ({ params, body, ctx }) =>
      approvals.decide(
        ctx.principal,
        { stop: params.stop_id, round: body.round },
        body.decision === 'respond'
          ? { decision: 'respond', reason: body.reason ?? null, response: body.response! }
          : body.decision === 'reject'
            ? { decision: 'reject', reason: body.reason ?? null }
            : {
                decision: 'approve',
                reason: body.reason ?? null,
                ...(body.edits ? { edits: body.edits } : {}),
                ...(body.arguments ? { arguments: body.arguments } : {}),
                ...(body.allow_for_thread !== undefined ? { allowForThread: body.allow_for_thread } : {}),
              },
      ),
  });

  api.route({
    method: 'post',
    path: '/stops/{stop_id}/answer',
    operationId: 'answerQuestion',
    tag: 'approvals',
    summary:
      "Answer a tool server's question (a stop of kind `question`): accept with the fields it asks for (form mode) or once its page is done (url mode), decline, or cancel; the answer goes back to the server, which goes on with the call",
    params: z.object({ stop_id: StopIdSchema }),
    body: AnswerQuestionBodySchema,
    idempotent: true,
    errors: {
      400: "invalid request: content that does not fit the question's fields, or content with decline, cancel or a url-mode question (invalid_request)",
      403: "below member on the run's project (forbidden)",
      404: 'no such question, or one the caller may not see (not_found)',
      409: 'the question is not pending: answered, expired, or withdrawn because its call ended (conflict)',
    },
    responses: { 200: { description: 'the answer was taken', schema: QuestionAnsweredSchema } },
    handler: ({ params, body, ctx }) => approvals.answerQuestion(ctx.principal, params.stop_id, body),
  });

  api.route({
    method: 'get',
    path: '/threads/{id}/tool-grants',
    operationId: 'listToolGrants',
    tag: 'approvals',
    summary: 'The tools allowed for the rest of the thread by an approval, and the grants revoked since, oldest first',
    params: z.object({ id: UuidSchema }),
    responses: { 200: { description: 'the grants', schema: z.array(ToolGrantSchema) } },
    handler: ({ params, ctx }) => approvals.toolGrants(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/threads/{id}/tool-grants/{grant_id}/revoke',
    operationId: 'revokeToolGrant',
    tag: 'approvals',
    summary: "Revoke a grant: the tool's next calls on the thread ask again",
    params: z.object({ id: UuidSchema, grant_id: z.string().regex(/^\d{1,18}$/, 'must be a grant id') }),
    errors: {
      403: "below member on the thread's project (forbidden)",
      404: 'no such thread, or no grant of that id holds on it (not_found)',
    },
    responses: { 200: { description: 'the revoked grant', schema: ToolGrantSchema } },
    handler: ({ params, ctx }) => approvals.revokeToolGrant(ctx.principal, params.id, params.grant_id),
  });

  api.route({
    method: 'get',
    path: '/threads/{id}/decisions',
    operationId: 'listThreadDecisions',
    tag: 'approvals',
    summary: "Every decision taken at the thread's gates, oldest first: who, under which role, when, what and why",
    params: z.object({ id: UuidSchema }),
    responses: { 200: { description: 'the decisions', schema: z.array(GateDecisionRecordSchema) } },
    handler: ({ params, ctx }) => approvals.threadDecisions(ctx.principal, params.id),
  });

  api.route({
    method: 'get',
    path: '/approvals',
    operationId: 'listApprovals',
    tag: 'approvals',
    summary:
      'The approvals inbox: gates waiting for the caller to decide, across every project where her role reaches the gate, oldest first',
    responses: { 200: { description: 'the waiting gates', schema: z.array(ApprovalItemSchema) } },
    handler: ({ ctx }) => approvals.inbox(ctx.principal),
  });
}
