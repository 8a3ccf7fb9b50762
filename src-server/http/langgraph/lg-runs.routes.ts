import type { Response } from 'express';
import { z } from 'zod';
import type { Principal } from '../../auth/principal';
import { badRequest } from '../../contracts/errors';
import type { Api } from '../api';
import type { AppDeps } from '../deps';
import { DEFAULT_MODES, type LgDoor, type LgRunStarted } from './lg-door';
import { lgRun } from './lg-views';
import {
  LgRunCreateSchema,
  LgRunSchema,
  LgRunStatusSchema,
  LgStreamEventSchema,
  StreamModeQuerySchema,
  type StreamMode,
} from './lg-schemas';
import { parseCursor } from './lg-stream';
import { ThreadParams } from './lg-threads.routes';
import { wantsJson } from '../run-stream';

const RunParams = ThreadParams.extend({ run_id: z.uuid() });

const LOCATIONS = {
  'Content-Location': {
    description: 'the run, relative to the LangGraph API\u2019s address (`/threads/{thread_id}/runs/{run_id}`)',
    schema: { type: 'string' as const, examples: ['/threads/…/runs/…'] },
  },
  Location: {
    description: 'where to join its stream again after a cut, with Last-Event-ID (`…/runs/{run_id}/stream`)',
    schema: { type: 'string' as const, examples: ['/threads/…/runs/…/stream'] },
  },
};

const lgStream = {
  description:
    'Server-sent events as LangGraph\u2019s clients read them: `metadata` first (`run_id`, `thread_id`), then per the ' +
    'stream modes `values` (the thread\u2019s messages and outputs after each step), `updates` (a step\u2019s output ' +
    'under its node), `messages` (`[message chunk, metadata]`; ids match `values` and the history), `custom` (the ' +
    'service\u2019s own run events as they are), `events` (on_chain_start and on_chain_end per phase), and `error` ' +
    '(`{error, message}`). A stop shows as `__interrupt__` in `values` and `updates`, and the stream ends there. Each ' +
    'event has an id `<n>-<k>`: send the last as Last-Event-ID to the Location to go on after it.',
  schema: LgStreamEventSchema,
  contentType: 'text/event-stream',
  headers: LOCATIONS,
};

const RUN_ERRORS = {
  400: 'invalid request: no text message in the input, an unknown decision, or a stream mode not offered (invalid_request)',
  403: "needs the member role on the thread's project, or the stop's role for a decision (forbidden)",
  404: 'no such thread, assistant or checkpoint (not_found)',
  409:
    'the thread is busy and multitask_strategy is reject; it belongs to another agent; a resume when no interrupt ' +
    'waits, for another interrupt, or one already decided (conflict)',
  429: 'the caller has LOCAL_LLM_MAX_RUNS_PER_USER runs on the local runtime already; see Retry-After (too_many_requests)',
} as const;

const ResumeHeaders = z.object({
  'Last-Event-ID': z.string().optional().meta({
    description: 'the last event the client has (`<n>-<k>`): the stream goes on after it; `-1`: from the start',
  }),
});

/** Runs of a thread: start one (streamed, in the background, or waited for), decide its stop, follow it, cancel it. */
export function lgRunRoutes(api: Api, deps: AppDeps, door: LgDoor): void {
  const { lgThreads, runsService } = deps;

  const runOf = async (principal: Principal, threadId: string, runId: string) =>
    lgRun(await door.run(principal, threadId, runId));

  const locate = (res: Response, started: Pick<LgRunStarted, 'threadId' | 'runId'>) => {
    res.setHeader('Content-Location', `/threads/${started.threadId}/runs/${started.runId}`);
    res.setHeader('Location', `/threads/${started.threadId}/runs/${started.runId}/stream`);
  };

  api.route({
    method: 'post',
    path: '/lg/threads/{thread_id}/runs/stream',
    operationId: 'lgStreamRun',
    tag: 'langgraph',
    summary:
      'LangGraph API: start a run and stream it, or decide the interrupt the thread waits at (`command.resume`) and stream what follows',
    params: ThreadParams,
    body: LgRunCreateSchema,
    errors: RUN_ERRORS,
    responses: {
      200: {
        ...lgStream,
        description:
          'The run\u2019s stream (what LangGraph\u2019s clients ask for). With `Accept: application/json`, the run at once ' +
          'instead, as POST /lg/threads/{thread_id}/runs answers: a generated client never sends the POST again on a ' +
          'cut.\n\n' +
          lgStream.description,
        alternatives: { 'application/json': LgRunSchema },
      },
    },
    handler: async ({ params, body, ctx, req, res }) => {
      const started = await door.start(ctx.principal, params.thread_id, body, req);
      if (wantsJson(req)) {
        locate(res, started);
        return runOf(ctx.principal, started.threadId, started.runId);
      }
      await door.pipe(ctx.principal, started, parseCursor(undefined), res, body.on_disconnect === 'cancel');
    },
  });

  api.route({
    method: 'post',
    path: '/lg/threads/{thread_id}/runs',
    operationId: 'lgCreateRun',
    tag: 'langgraph',
    summary: 'LangGraph API: start a run (or decide the interrupt) in the background; answers the run',
    params: ThreadParams,
    body: LgRunCreateSchema,
    errors: RUN_ERRORS,
    responses: { 200: { description: 'the run', schema: LgRunSchema, headers: LOCATIONS } },
    handler: async ({ params, body, ctx, req, res }) => {
      const started = await door.start(ctx.principal, params.thread_id, body, req);
      locate(res, started);
      return runOf(ctx.principal, started.threadId, started.runId);
    },
  });

  /** Waits for the run's end or stop, a minute at a time, until the client leaves. */
  const waitValues = async (principal: Principal, threadId: string, runId: string, res: Response) => {
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    return door.finalValues(principal, threadId, runId, gone.signal);
  };

  api.route({
    method: 'post',
    path: '/lg/threads/{thread_id}/runs/wait',
    operationId: 'lgWaitRun',
    tag: 'langgraph',
    summary:
      'LangGraph API: start a run (or decide the interrupt) and answer its values once it ends or stops (`__interrupt__`), or its error (`__error__`)',
    params: ThreadParams,
    body: LgRunCreateSchema,
    errors: RUN_ERRORS,
    responses: {
      200: { description: 'the values', schema: z.record(z.string(), z.unknown()), headers: LOCATIONS },
    },
    handler: async ({ params, body, ctx, req, res }) => {
      const started = await door.start(ctx.principal, params.thread_id, body, req);
      locate(res, started);
      return waitValues(ctx.principal, started.threadId, started.runId, res);
    },
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}/runs',
    operationId: 'lgListRuns',
    tag: 'langgraph',
    summary: "LangGraph API: the thread's runs, newest first",
    params: ThreadParams,
    query: z.object({
      limit: z.coerce.number().int().min(1).max(1000).default(10),
      offset: z.coerce.number().int().min(0).default(0),
      status: LgRunStatusSchema.optional(),
      select: z.unknown().optional(),
    }),
    responses: { 200: { description: 'the runs', schema: z.array(LgRunSchema) } },
    handler: async ({ params, query, ctx }) => {
      await deps.lgThreads.visible(ctx.principal, params.thread_id);
      const runs = (await lgThreads.runs([params.thread_id])).reverse().map(lgRun);
      const matching = runs.filter((r) => !query.status || r.status === query.status);
      return matching.slice(query.offset, query.offset + query.limit);
    },
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}/runs/{run_id}',
    operationId: 'lgGetRun',
    tag: 'langgraph',
    summary: 'LangGraph API: one run (a run stopped at an interrupt is `success`: its thread is `interrupted`)',
    params: RunParams,
    responses: { 200: { description: 'the run', schema: LgRunSchema } },
    handler: ({ params, ctx }) => runOf(ctx.principal, params.thread_id, params.run_id),
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}/runs/{run_id}/join',
    operationId: 'lgJoinRun',
    tag: 'langgraph',
    summary: 'LangGraph API: wait for the run to end or stop, and answer its values (or `__error__`)',
    params: RunParams,
    query: z.object({ cancel_on_disconnect: z.string().max(10).optional() }),
    responses: { 200: { description: 'the values', schema: z.record(z.string(), z.unknown()) } },
    handler: async ({ params, ctx, res }) => {
      await door.run(ctx.principal, params.thread_id, params.run_id);
      return waitValues(ctx.principal, params.thread_id, params.run_id, res);
    },
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}/runs/{run_id}/stream',
    operationId: 'lgJoinRunStream',
    tag: 'langgraph',
    summary:
      "LangGraph API: join a run's stream on any server, from the start or after Last-Event-ID, to its end or its stop",
    params: RunParams,
    query: z.object({
      stream_mode: StreamModeQuerySchema,
      cancel_on_disconnect: z.string().max(10).optional(),
      last_event_id: z.string().max(40).optional().meta({ description: 'the same as Last-Event-ID' }),
    }),
    headers: ResumeHeaders,
    responses: {
      200: lgStream,
      204: {
        description:
          'Nothing more will come: the run ended, or waits at an interrupt, and the client has its last event ' +
          '(Last-Event-ID). A browser\u2019s EventSource stops reconnecting on this answer.',
      },
    },
    handler: async ({ params, query, ctx, req, res }) => {
      const run = await door.run(ctx.principal, params.thread_id, params.run_id);
      const modes = (query.stream_mode ?? run.stream_mode ?? DEFAULT_MODES) as StreamMode[];
      const cursor = parseCursor(req.get('last-event-id') ?? query.last_event_id);
      const cancel = query.cancel_on_disconnect === '1' || query.cancel_on_disconnect === 'true';
      await door.pipe(
        ctx.principal,
        { runId: run.id, threadId: run.thread_id, since: 0, stillWaiting: false, modes },
        cursor,
        res,
        cancel,
      );
    },
  });

  api.route({
    method: 'post',
    path: '/lg/threads/{thread_id}/runs/{run_id}/cancel',
    operationId: 'lgCancelRun',
    tag: 'langgraph',
    summary: 'LangGraph API: cancel a running, queued or waiting run (`wait=1`: answer once it has stopped)',
    params: RunParams,
    query: z.object({
      wait: z.enum(['0', '1', 'true', 'false']).optional(),
      action: z.enum(['interrupt', 'rollback']).optional(),
      reason: z.string().max(2000).optional(),
    }),
    errors: {
      400: 'invalid request, or action=rollback: a cancelled run keeps what it did (invalid_request)',
      403: "needs the member role on the run's project (forbidden)",
      409: 'the run has already finished (conflict)',
    },
    responses: { 202: { description: 'cancelling' }, 204: { description: 'cancelled (wait=1)' } },
    handler: async ({ params, query, ctx, res }) => {
      if (query.action === 'rollback') throw badRequest('invalid query parameters: action: rollback is not supported');
      await door.run(ctx.principal, params.thread_id, params.run_id);
      await runsService.cancelRun(ctx.principal, params.run_id, query.reason ?? null);
      if (query.wait === '1' || query.wait === 'true') return undefined;
      res.status(202).end();
    },
  });
}
