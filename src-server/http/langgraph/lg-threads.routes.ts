import { z } from 'zod';
import type { Principal } from '../../auth/principal';
import type { LgThreadFilter } from '../../storage/lg-threads';
import type { Api } from '../api';
import type { AppDeps } from '../deps';
import type { LgDoor } from './lg-door';
import { assistantIdOf } from './lg-ids';
import {
  HistorySchema,
  LgThreadSchema,
  LgThreadStateSchema,
  StateUpdateSchema,
  ThreadCreateSchema,
  ThreadPatchSchema,
  ThreadSearchSchema,
  type ThreadSearch,
} from './lg-schemas';

export const ThreadParams = z.object({ thread_id: z.uuid() });
const CheckpointParams = ThreadParams.extend({ checkpoint_id: z.string().min(1).max(100) });

const MEMBER = { 403: "needs the member role on the thread's project (forbidden)" } as const;

const PAGINATION = {
  'X-Pagination-Total': {
    description: 'how many threads match in all',
    schema: { type: 'string' as const, examples: ['42'] },
  },
  'X-Pagination-Next': {
    description: 'the offset of the next page; absent on the last',
    schema: { type: 'string' as const, examples: ['10'] },
  },
};

/** The checkpoint id a history's `before` names: an id, or a config `{configurable: {checkpoint_id}}`. */
function checkpointIdOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  const config = value as { configurable?: { checkpoint_id?: unknown }; checkpoint_id?: unknown } | undefined;
  const id = config?.configurable?.checkpoint_id ?? config?.checkpoint_id;
  return typeof id === 'string' ? id : undefined;
}

/** Threads, their state and their history, as LangGraph's clients read them. */
export function lgThreadRoutes(api: Api, deps: AppDeps, door: LgDoor): void {
  const { lgThreads } = deps;

  /** Which threads a search or a count finds: the same filter for both, so that a count is the search's total. */
  const filterOf = async (principal: Principal, body: ThreadSearch): Promise<LgThreadFilter> => {
    const { assistant_id: assistantId, ...metadata } = body.metadata ?? {};
    const filter = { metadata, ids: body.ids ?? null, status: body.status ?? null };
    if (assistantId === undefined) return filter;
    // A thread's assistant is its agent: the id is derived from the name, so the name is what is searched.
    const entry = (await door.assistants(principal))
      .map((a) => a.entry.manifest)
      .find((m) => assistantIdOf(m.name) === assistantId || m.name === assistantId);
    // No assistant has that id: no thread is one of its.
    return entry ? { ...filter, metadata: { ...metadata, graph_id: entry.name } } : { ...filter, ids: [] };
  };

  api.route({
    method: 'post',
    path: '/lg/threads',
    operationId: 'lgCreateThread',
    tag: 'langgraph',
    summary:
      "LangGraph API: create a thread in the caller's project; its first run names its agent (a `graph_id` in the body or the metadata holds it to that one)",
    body: ThreadCreateSchema,
    errors: {
      ...MEMBER,
      404: 'the caller has no project to create it in, or thread_id is a thread the caller may not see, whatever if_exists says (not_found)',
      409: 'a thread with this thread_id exists, the caller may see it, and if_exists is raise (conflict)',
    },
    responses: { 200: { description: 'the thread', schema: LgThreadSchema } },
    handler: async ({ body, ctx }) => {
      const metadata = { ...(body.metadata ?? {}), ...(body.graph_id ? { graph_id: body.graph_id } : {}) };
      const row = await lgThreads.create(ctx.principal, {
        ...(body.thread_id ? { id: body.thread_id } : {}),
        metadata,
        ...(body.if_exists ? { ifExists: body.if_exists } : {}),
      });
      return (await door.threads([row]))[0]!;
    },
  });

  api.route({
    method: 'post',
    path: '/lg/threads/search',
    operationId: 'lgSearchThreads',
    tag: 'langgraph',
    summary:
      'LangGraph API: the threads the caller may see, by metadata (containment; `graph_id` and `assistant_id` are a thread\u2019s agent), ids and status',
    body: ThreadSearchSchema,
    responses: {
      200: { description: 'a page of threads', schema: z.array(LgThreadSchema), headers: PAGINATION },
    },
    handler: async ({ body, ctx, res }) => {
      const limit = body.limit ?? 10;
      const offset = body.offset ?? 0;
      const { threads, total } = await lgThreads.search(ctx.principal, {
        ...(await filterOf(ctx.principal, body)),
        limit,
        offset,
        sortBy: body.sort_by === 'state_updated_at' ? 'updated_at' : (body.sort_by ?? 'updated_at'),
        sortOrder: body.sort_order ?? 'desc',
      });
      res.setHeader('X-Pagination-Total', String(total));
      if (offset + threads.length < total) res.setHeader('X-Pagination-Next', String(offset + threads.length));
      return door.threads(threads);
    },
  });

  api.route({
    method: 'post',
    path: '/lg/threads/count',
    operationId: 'lgCountThreads',
    tag: 'langgraph',
    summary:
      'LangGraph API: how many threads a search with the same metadata (`graph_id` and `assistant_id` a thread\u2019s agent), ids and status finds',
    body: ThreadSearchSchema,
    responses: { 200: { description: 'the count', schema: z.number().int() } },
    handler: async ({ body, ctx }) => lgThreads.count(ctx.principal, await filterOf(ctx.principal, body)),
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}',
    operationId: 'lgGetThread',
    tag: 'langgraph',
    summary: 'LangGraph API: one thread, with its values and the interrupt it waits at',
    params: ThreadParams,
    responses: { 200: { description: 'the thread', schema: LgThreadSchema } },
    handler: ({ params, ctx }) => door.thread(ctx.principal, params.thread_id),
  });

  api.route({
    method: 'patch',
    path: '/lg/threads/{thread_id}',
    operationId: 'lgPatchThread',
    tag: 'langgraph',
    summary: "LangGraph API: merge keys into a thread's metadata",
    params: ThreadParams,
    body: ThreadPatchSchema,
    errors: MEMBER,
    responses: { 200: { description: 'the thread', schema: LgThreadSchema } },
    handler: async ({ params, body, ctx }) => {
      const { graph_id: _g, assistant_id: _a, ...metadata } = body.metadata ?? {};
      const row = await lgThreads.patch(ctx.principal, params.thread_id, metadata);
      return (await door.threads([row]))[0]!;
    },
  });

  api.route({
    method: 'delete',
    path: '/lg/threads/{thread_id}',
    operationId: 'lgDeleteThread',
    tag: 'langgraph',
    summary: 'LangGraph API: delete a thread with its runs and checkpoints (active runs are cancelled first)',
    params: ThreadParams,
    errors: MEMBER,
    responses: { 204: { description: 'deleted' } },
    handler: async ({ params, ctx }) => {
      await lgThreads.delete(ctx.principal, params.thread_id);
    },
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}/state',
    operationId: 'lgGetThreadState',
    tag: 'langgraph',
    summary: "LangGraph API: the thread's state at its newest checkpoint",
    params: ThreadParams,
    query: z.object({ subgraphs: z.string().max(10).optional() }),
    responses: { 200: { description: 'the state', schema: LgThreadStateSchema } },
    handler: ({ params, ctx }) => door.state(ctx.principal, params.thread_id),
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}/state/{checkpoint_id}',
    operationId: 'lgGetThreadStateAt',
    tag: 'langgraph',
    summary: "LangGraph API: the thread's state at one of its checkpoints",
    params: CheckpointParams,
    query: z.object({ subgraphs: z.string().max(10).optional() }),
    responses: { 200: { description: 'the state', schema: LgThreadStateSchema } },
    handler: ({ params, ctx }) => door.state(ctx.principal, params.thread_id, params.checkpoint_id),
  });

  api.route({
    method: 'post',
    path: '/lg/threads/{thread_id}/state/checkpoint',
    operationId: 'lgPostThreadStateAt',
    tag: 'langgraph',
    summary: "LangGraph API: the thread's state at the checkpoint the body names",
    params: ThreadParams,
    body: z.object({
      checkpoint: z.object({ checkpoint_id: z.string().min(1).max(100) }),
      subgraphs: z.boolean().optional(),
    }),
    responses: { 200: { description: 'the state', schema: LgThreadStateSchema } },
    handler: ({ params, body, ctx }) => door.state(ctx.principal, params.thread_id, body.checkpoint.checkpoint_id),
  });

  api.route({
    method: 'post',
    path: '/lg/threads/{thread_id}/state',
    operationId: 'lgUpdateThreadState',
    tag: 'langgraph',
    summary:
      'LangGraph API: only `{values: null, as_node: "__end__"}` (Agent Inbox\u2019s "mark as resolved"): the run waiting at an interrupt is cancelled',
    params: ThreadParams,
    body: StateUpdateSchema,
    errors: {
      ...MEMBER,
      400: 'invalid request, or any other state update: this service makes none (invalid_request)',
      409: 'the thread does not wait at an interrupt (conflict)',
    },
    responses: {
      200: {
        description: 'the checkpoint the thread is at',
        schema: z.object({
          configurable: z.object({ thread_id: z.uuid(), checkpoint_ns: z.string(), checkpoint_id: z.string() }),
        }),
      },
    },
    handler: async ({ params, body, ctx }) => {
      await door.resolve(ctx.principal, params.thread_id, body);
      const state = await door.state(ctx.principal, params.thread_id);
      return {
        configurable: {
          thread_id: params.thread_id,
          checkpoint_ns: '',
          checkpoint_id: state.checkpoint.checkpoint_id,
        },
      };
    },
  });

  api.route({
    method: 'post',
    path: '/lg/threads/{thread_id}/history',
    operationId: 'lgThreadHistory',
    tag: 'langgraph',
    summary: "LangGraph API: the thread's states, newest first, each run's steps and stops",
    params: ThreadParams,
    body: HistorySchema,
    responses: { 200: { description: 'the states, newest first', schema: z.array(LgThreadStateSchema) } },
    handler: ({ params, body, ctx }) =>
      door.history(ctx.principal, params.thread_id, body.limit ?? 10, checkpointIdOf(body.before)),
  });

  api.route({
    method: 'get',
    path: '/lg/threads/{thread_id}/history',
    operationId: 'lgThreadHistoryGet',
    tag: 'langgraph',
    summary: "LangGraph API: the thread's states, newest first",
    params: ThreadParams,
    query: z.object({
      limit: z.coerce.number().int().min(1).max(1000).default(10),
      before: z.string().max(100).optional(),
    }),
    responses: { 200: { description: 'the states, newest first', schema: z.array(LgThreadStateSchema) } },
    handler: ({ params, query, ctx }) => door.history(ctx.principal, params.thread_id, query.limit, query.before),
  });
}
