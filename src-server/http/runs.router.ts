import { z } from 'zod';
import { ErrorBodySchema, ReasonBodySchema } from '../contracts/common';
import { RunEventSchema } from '../contracts/events';
import { RunAcceptedSchema, RunDetailSchema, RunRequestSchema, RunSchema } from '../contracts/runs';
import type { Api } from './api';
import type { AppDeps } from './deps';
import { lastEventId, pipeRunStream, wantsEventStream } from './run-stream';

const RunIdParams = z.object({ id: z.uuid({ message: 'must be a UUID' }) });
const GateParams = z.object({ id: z.uuid({ message: 'must be a UUID' }), gate: z.string().min(1).max(100) });
const eventStream = {
  description: 'server-sent events: `event: <type>`, `id: <n>`, `data: <RunEvent JSON>`',
  schema: RunEventSchema,
  contentType: 'text/event-stream',
};

export function runRoutes(api: Api, { runsService, threadsService }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/graphs/{agent}/run',
    operationId: 'runAgent',
    tag: 'runs',
    summary: 'Run an agent or a command; the response is its event stream',
    params: z.object({ agent: z.string().min(1).max(200) }),
    body: RunRequestSchema,
    responses: {
      200: eventStream,
      409: { description: 'the thread already has an active run' },
      429: {
        description: 'the caller has LOCAL_LLM_MAX_RUNS_PER_USER runs on the local runtime already; see Retry-After',
        schema: ErrorBodySchema,
      },
    },
    handler: async ({ params, body, ctx, res }) => {
      const run = await runsService.startRun(ctx.principal, params.agent, body);
      await pipeRunStream(run, 0, res);
    },
  });

  api.route({
    method: 'get',
    path: '/runs/{id}/stream',
    operationId: 'streamRun',
    tag: 'runs',
    summary:
      "Re-attach to a run's event stream, on any server: all events, or those after Last-Event-ID, live to the end",
    params: RunIdParams,
    responses: { 200: eventStream },
    handler: async ({ params, ctx, req, res }) => {
      const run = await runsService.stream(ctx.principal, params.id);
      await pipeRunStream(run, lastEventId(req), res);
    },
  });

  api.route({
    method: 'get',
    path: '/runs/{id}',
    operationId: 'getRun',
    tag: 'runs',
    summary: 'Run detail with per-node state, matched routes and the pending gate',
    params: RunIdParams,
    responses: { 200: { description: 'the run', schema: RunDetailSchema } },
    handler: ({ params, ctx }) => runsService.runDetail(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/runs/{id}/cancel',
    operationId: 'cancelRun',
    tag: 'runs',
    summary: 'Cancel a running or approval-waiting run; its in-flight model call is aborted',
    params: RunIdParams,
    body: ReasonBodySchema,
    responses: {
      200: { description: 'cancelled', schema: RunAcceptedSchema },
      409: { description: 'the run has already finished' },
    },
    handler: ({ params, body, ctx }) => runsService.cancelRun(ctx.principal, params.id, body.reason ?? null),
  });

  for (const decision of ['approve', 'reject'] as const) {
    api.route({
      method: 'post',
      path: `/threads/{id}/gates/{gate}/${decision}`,
      operationId: decision === 'approve' ? 'approveGate' : 'rejectGate',
      tag: 'runs',
      summary:
        decision === 'approve'
          ? 'Approve a pending gate and resume the run from its checkpoint'
          : 'Reject a pending gate: the run ends without running downstream nodes',
      params: GateParams,
      body: ReasonBodySchema,
      responses: {
        200: { ...eventStream, description: 'with Accept: text/event-stream, the resumed run as SSE' },
        202: {
          description: 'otherwise: the run resumed; follow it at GET /runs/{id}/stream',
          schema: RunAcceptedSchema,
        },
        409: { description: 'the gate is not pending, was already decided, or its checkpoint is gone' },
      },
      handler: async ({ params, body, ctx, req, res }) => {
        const run = await runsService.decideGate(
          ctx.principal,
          params.id,
          params.gate,
          decision === 'approve',
          body.reason ?? null,
        );
        if (wantsEventStream(req)) {
          await pipeRunStream(run, run.since, res);
          return;
        }
        res.status(202).json({ run_id: run.runId, thread_id: run.threadId, status: 'running' });
      },
    });
  }

  api.route({
    method: 'get',
    path: '/threads/{id}/runs',
    operationId: 'listThreadRuns',
    tag: 'threads',
    summary: 'Run history of a thread, most recent first',
    params: RunIdParams,
    responses: { 200: { description: 'runs', schema: z.array(RunSchema) } },
    handler: ({ params, ctx }) => threadsService.runs(ctx.principal, params.id),
  });
}
