import { z } from 'zod';
import { ReasonBodySchema, UuidSchema } from '../contracts/common';
import { RunEventSchema, SSE_RETRY_MS } from '../contracts/events';
import type { Response } from 'express';
import type { RequestContext } from '../auth/principal';
import {
  ForkRequestSchema,
  runAccepted,
  type RunAccepted,
  RunAcceptedSchema,
  RunDetailSchema,
  RunRequestSchema,
  RunSchema,
  StreamTokenSchema,
} from '../contracts/runs';
import type { Api } from './api';
import type { AppDeps } from './deps';
import type { FollowableRun } from '../services/runs.service';
import { lastEventId, pipeRunStream } from './run-stream';

const RunIdParams = z.object({ id: UuidSchema });
/** The event names a stream carries, for the document: a client listening by name finds them all here. */
const EVENT_NAMES = RunEventSchema.options.map((option) => option.shape.type.value);

const eventStream = {
  description:
    `Server-sent events. The stream opens with \`retry: ${SSE_RETRY_MS}\` (milliseconds). Each event is one frame: ` +
    '`event:` its name, equal to its `type`; `id:` its place in the run (increasing, the same on every server and ' +
    're-attach); `data:` the RunEvent as one line of JSON. There are no unnamed (`message`) events: listen by name. ' +
    'The stream ends after run_done, run_error, run_cancelled, run_rejected or gate_waiting. Comment lines ' +
    `(\`: keep-alive\`) keep it open. Event names: ${EVENT_NAMES.join(', ')}.`,
  schema: RunEventSchema,
  contentType: 'text/event-stream',
  headers: {
    'Cache-Control': {
      description: 'no-cache, no-transform: the stream is never cached or rewritten',
      schema: { type: 'string' as const, examples: ['no-cache, no-transform'] },
    },
    'X-Accel-Buffering': {
      description: 'no: a reverse proxy (nginx) passes each event on at once',
      schema: { type: 'string' as const, examples: ['no'] },
    },
  },
};

/** Where a client that has already seen some of the run's events says where it stopped. */
const ResumeHeaders = z.object({
  'Last-Event-ID': z
    .string()
    .optional()
    .meta({
      description:
        'The id of the last event the client has (an EventSource sends it when it reconnects): the stream starts ' +
        'after it. Anything but a positive integer means from the first event.',
    }),
});

/**
 * Why a generated client should call the JSON twin of a run start that answers a stream: one 200 in two media types
 * is typed as the union of both, or as the JSON one while the stream is what comes.
 */
const callTwinInstead = (twin: string) =>
  'Generated clients type this answer from its two media types: as `RunAccepted | RunEvent` (openapi-fetch), where ' +
  '`data.run_id` does not type-check, or as RunAccepted alone (@hey-api/openapi-ts), though without ' +
  `\`Accept: application/json\` the answer is the event stream. From a generated client, call ${twin} instead: the ` +
  "same run, answered as a RunAccepted only; then follow it with streamRun, passing the answer's `last_event_id` as " +
  'it is.';

export function runRoutes(api: Api, { runsService, threadsService, auth, metrics }: AppDeps): void {
  const RUN_ERRORS = {
    403: 'needs the member role on the project or on the thread (forbidden)',
    404: 'no such agent or command, thread or project (not_found)',
    409:
      'the thread is busy (a run running, waiting or queued) and multitask_strategy is reject; a rollback of a run ' +
      'that cannot be rolled back; or the thread belongs to another agent (conflict)',
    429: 'the caller has LOCAL_LLM_MAX_RUNS_PER_USER runs on the local runtime already; see Retry-After (too_many_requests)',
  } as const;
  const AgentParams = z.object({ agent: z.string().min(1).max(200) });
  /** Runs this process just started, by their answer: followed as they are, with no second look-up. */
  const started = new WeakMap<RunAccepted, FollowableRun>();
  const accepted = (run: FollowableRun): RunAccepted => {
    const answer = runAccepted(run, run.status, 0);
    started.set(answer, run);
    return answer;
  };
  /**
   * The run's stream from its first event: the answer to a run start that did not ask for JSON. A retry under the same
   * Idempotency-Key answers the stored RunAccepted, and its run is looked up (and its access checked) again.
   */
  const followFromStart = async (answer: RunAccepted, { ctx, res }: { ctx: RequestContext; res: Response }) =>
    pipeRunStream(started.get(answer) ?? (await runsService.stream(ctx.principal, answer.run_id, 0)), 0, res, metrics);

  api.route({
    method: 'post',
    path: '/graphs/{agent}/run',
    operationId: 'runAgent',
    tag: 'runs',
    summary:
      'Run an agent or a command; the response is its event stream (from a generated client, use startRun, which answers JSON)',
    description: callTwinInstead('startRun'),
    params: AgentParams,
    body: RunRequestSchema,
    idempotent: true,
    errors: RUN_ERRORS,
    responses: {
      200: {
        ...eventStream,
        description:
          'The run. By default its event stream, to its end or its gate. With `Accept: application/json`, a RunAccepted ' +
          'at once instead, whose `stream_url` follows it. A generated client that does not set Accept gets the ' +
          'stream: call startRun (POST /agents/{agent}/runs) instead, which always answers JSON.\n\n' +
          eventStream.description,
        alternatives: { 'application/json': RunAcceptedSchema },
      },
    },
    handler: async ({ params, body, ctx, req }) =>
      accepted(await runsService.startRun(ctx.principal, params.agent, body, req.get('traceparent'))),
    streamAnswer: followFromStart,
  });

  api.route({
    method: 'post',
    path: '/agents/{agent}/runs',
    operationId: 'startRun',
    tag: 'runs',
    summary: 'Start a run of an agent or a command without streaming: answers its ids and where to follow it, as JSON',
    params: AgentParams,
    body: RunRequestSchema,
    idempotent: true,
    errors: RUN_ERRORS,
    responses: {
      202: {
        description:
          "The run started and goes on in the background (`status` running), or waits in its thread's line " +
          '(`queued`, multitask_strategy enqueue): follow its events at `stream_url` (GET /runs/{id}/stream), ' +
          'read it at `run_url` (GET /runs/{id}). The answer is JSON whatever the Accept header says.',
        schema: RunAcceptedSchema,
      },
    },
    handler: async ({ params, body, ctx, req }) => {
      const run = await runsService.startRun(ctx.principal, params.agent, body, req.get('traceparent'));
      return runAccepted(run, run.status, 0);
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
    query: z.object({
      // An integer, as RunAccepted.last_event_id is: a generated client passes one to the other as it is. Null is no
      // id (coerced, it would pass as 0, and the document would call the parameter nullable).
      last_event_id: z
        .preprocess((value) => value ?? undefined, z.coerce.number().int().min(0))
        .optional()
        .meta({
          description:
            'the same as the Last-Event-ID header, for a client that cannot set headers: a RunAccepted\u2019s last_event_id',
        }),
      // A parameter, not a security scheme: generated clients send a token to every scheme an operation lists.
      access_token: z.string().max(4000).optional().meta({
        description:
          "A stream token from POST /runs/{id}/stream-token, for a client that cannot send an Authorization header (a browser's EventSource): it follows this run only. Ignored when the request has an Authorization header.",
      }),
    }),
    headers: ResumeHeaders,
    streamTokenFor: 'id',
    responses: {
      200: eventStream,
      204: {
        description:
          'Nothing more will come: the run ended, or waits at a gate, and the client has its last event. ' +
          'An EventSource stops reconnecting on this answer.',
      },
    },
    handler: async ({ params, ctx, req, res }) => {
      const afterId = lastEventId(req);
      const run = await runsService.stream(ctx.principal, params.id, afterId);
      if (run.over) return undefined;
      await pipeRunStream(run, afterId, res, metrics);
    },
  });

  api.route({
    method: 'post',
    path: '/runs/{id}/stream-token',
    operationId: 'createStreamToken',
    tag: 'runs',
    summary:
      "A short-lived credential to follow this run's stream without an Authorization header (a browser's EventSource)",
    params: RunIdParams,
    responses: { 200: { description: 'the stream token', schema: StreamTokenSchema } },
    handler: async ({ params, ctx, res }) => {
      await runsService.requireReadable(ctx.principal, params.id);
      const { token, expiresAt } = await auth.issueStreamToken(ctx.principal, params.id);
      // A credential: no cache keeps it.
      res.setHeader('Cache-Control', 'no-store');
      return {
        token,
        expires_at: expiresAt.toISOString(),
        stream_url: `/runs/${params.id}/stream?access_token=${encodeURIComponent(token)}`,
      };
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
    method: 'get',
    path: '/runs/{id}/wait',
    operationId: 'waitForRun',
    tag: 'runs',
    summary:
      'Wait, without a stream, until the run ends or stops for a person (a gate, a tool call that asks), at most timeout_s seconds; answers the run',
    params: RunIdParams,
    query: z.object({
      timeout_s: z.coerce.number().int().min(1).max(60).default(30).meta({
        description: 'how long to wait at most (1–60 s, default 30); ask again while `status` is still `running`',
      }),
    }),
    responses: {
      200: {
        description:
          'the run when it ended (`completed`, `rejected`, `error`, `cancelled`), stopped for a person ' +
          '(`waiting_approval`, with `pending_gate`), or the wait was over (`running`)',
        schema: RunDetailSchema,
      },
    },
    handler: async ({ params, query, ctx, res }) => {
      // The client hung up: stop waiting (an answer that finished closes the response too, after the wait).
      const gone = new AbortController();
      res.on('close', () => gone.abort());
      return runsService.waitFor(ctx.principal, params.id, query.timeout_s, gone.signal);
    },
  });

  api.route({
    method: 'post',
    path: '/runs/{id}/cancel',
    operationId: 'cancelRun',
    tag: 'runs',
    summary: 'Cancel a running or approval-waiting run; its in-flight model call is aborted',
    params: RunIdParams,
    body: ReasonBodySchema,
    idempotent: true,
    errors: {
      403: "needs the member role on the run's project (forbidden)",
      409: 'the run has already finished (conflict)',
    },
    responses: { 200: { description: 'cancelled', schema: RunAcceptedSchema } },
    handler: ({ params, body, ctx }) => runsService.cancelRun(ctx.principal, params.id, body.reason ?? null),
  });

  const CheckpointParams = z.object({
    id: UuidSchema,
    checkpoint_id: z.string().min(1).max(100),
  });
  const FORK_ERRORS = {
    400: 'invalid request, the checkpoint is where a run ended and no message is sent (or `outputs` is), or `outputs` names a phase that had not run there (invalid_request)',
    403: "needs the member role on the thread's project (forbidden)",
    404: 'no such thread or checkpoint, or its agent is not loaded (not_found)',
    409: 'the thread already has an active run (conflict)',
    429: 'the caller has LOCAL_LLM_MAX_RUNS_PER_USER runs on the local runtime already; see Retry-After (too_many_requests)',
  } as const;

  api.route({
    method: 'post',
    path: '/threads/{id}/checkpoints/{checkpoint_id}/run',
    operationId: 'runFromCheckpoint',
    tag: 'runs',
    summary:
      "Fork: start a new run on the thread that continues from one of its checkpoints, with the message, the model or earlier phases' outputs edited (from where a run ended: a run with a new message that follows it); the response is its event stream (from a generated client, use startRunFromCheckpoint)",
    description: callTwinInstead('startRunFromCheckpoint'),
    params: CheckpointParams,
    body: ForkRequestSchema,
    idempotent: true,
    errors: FORK_ERRORS,
    responses: {
      200: {
        ...eventStream,
        description:
          'The new run, as POST /graphs/{agent}/run answers: by default its event stream, to its end or its gate. With ' +
          '`Accept: application/json`, a RunAccepted at once instead, whose `stream_url` follows it. A generated ' +
          'client that does not set Accept gets the stream: call startRunFromCheckpoint instead, which answers JSON.\n\n' +
          eventStream.description,
        alternatives: { 'application/json': RunAcceptedSchema },
      },
    },
    handler: async ({ params, body, ctx, req }) =>
      accepted(await runsService.forkRun(ctx.principal, params.id, params.checkpoint_id, body, req.get('traceparent'))),
    streamAnswer: followFromStart,
  });

  api.route({
    method: 'post',
    path: '/threads/{id}/checkpoints/{checkpoint_id}/runs',
    operationId: 'startRunFromCheckpoint',
    tag: 'runs',
    summary:
      'Fork without streaming: start a new run on the thread from one of its checkpoints; answers its ids and where to follow it, as JSON',
    params: CheckpointParams,
    body: ForkRequestSchema,
    idempotent: true,
    errors: FORK_ERRORS,
    responses: {
      202: {
        description:
          'The new run started and goes on in the background: follow its events at `stream_url`, read it at ' +
          '`run_url`. The answer is JSON whatever the Accept header says.',
        schema: RunAcceptedSchema,
      },
    },
    handler: async ({ params, body, ctx, req }) =>
      runAccepted(
        await runsService.forkRun(ctx.principal, params.id, params.checkpoint_id, body, req.get('traceparent')),
        'running',
        0,
      ),
  });

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
