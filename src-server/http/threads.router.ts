import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import {
  CheckpointSchema,
  CreateThreadSchema,
  RenameThreadSchema,
  RunStatusSchema,
  ThreadPageSchema,
  ThreadSchema,
} from '../contracts/runs';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });

export function threadRoutes(api: Api, { threadsService }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/threads',
    operationId: 'listThreads',
    tag: 'threads',
    summary:
      'Threads the caller may see, most recent first; paging through them returns every thread that existed when the listing began',
    query: z.object({
      limit: z.coerce.number().int().min(1).max(200).default(50),
      cursor: z.string().max(500).optional().meta({
        description:
          "the previous page's next_cursor. A listing remembers when it began: the threads updated until then come first, most recent first, then those updated since (a run started in them meanwhile), least recently updated first, so a thread that moves while a script pages is still returned; one may come twice",
      }),
      project_id: UuidSchema.optional(),
      drafts: z
        .enum(['true', 'false'])
        .default('false')
        .meta({ description: 'true: with the threads unsaved agents were tried in (left out by default)' }),
      q: z
        .string()
        .trim()
        .min(1)
        .max(200)
        .optional()
        .meta({
          description:
            "words of a run's message or final output, or of the thread's name, as a search engine takes them: " +
            '`"a phrase"`, `or`, `-word` (full-text, words as written, any case)',
          examples: ['timeout retry', '"connection refused" -staging'],
        }),
      agent: z.string().trim().min(1).max(200).optional().meta({ description: "the thread's agent or command" }),
      status: RunStatusSchema.optional().meta({ description: 'the status of the run the thread stands at' }),
      started_by: UuidSchema.optional().meta({ description: 'the user who made the thread' }),
      from: z.iso
        .datetime({ offset: true })
        .optional()
        .meta({ description: 'ISO 8601: threads last active at or after this moment' }),
      to: z.iso.datetime({ offset: true }).optional().meta({ description: 'ISO 8601: threads last active before it' }),
    }),
    errors: { 404: 'the project named by project_id is not visible to the caller (not_found)' },
    responses: { 200: { description: 'a page of threads', schema: ThreadPageSchema } },
    handler: ({ query, ctx }) =>
      threadsService.list(ctx.principal, query.limit, query.cursor, query.project_id, query.drafts === 'true', {
        q: query.q,
        agent: query.agent,
        status: query.status,
        startedBy: query.started_by,
        from: query.from ? new Date(query.from) : undefined,
        to: query.to ? new Date(query.to) : undefined,
      }),
  });

  api.route({
    method: 'post',
    path: '/threads',
    operationId: 'createThread',
    tag: 'threads',
    summary: 'Create an empty thread for an agent or command',
    body: CreateThreadSchema,
    errors: {
      403: 'needs the member role on the project (forbidden)',
      404: 'no such agent or command, or the project is not visible to the caller (not_found)',
    },
    responses: { 201: { description: 'the new thread', schema: ThreadSchema } },
    handler: ({ body, ctx }) => threadsService.create(ctx.principal, body),
  });

  api.route({
    method: 'get',
    path: '/threads/{id}',
    operationId: 'getThread',
    tag: 'threads',
    summary: 'One thread',
    params: IdParams,
    responses: { 200: { description: 'the thread', schema: ThreadSchema } },
    handler: ({ params, ctx }) => threadsService.get(ctx.principal, params.id),
  });

  api.route({
    method: 'patch',
    path: '/threads/{id}',
    operationId: 'renameThread',
    tag: 'threads',
    summary: 'Rename a thread (its name is its first message until then; runs never change it)',
    params: IdParams,
    body: RenameThreadSchema,
    errors: {
      403: "needs the member role on the thread's project (forbidden)",
      404: 'no such thread, or it is not visible to the caller (not_found)',
    },
    responses: { 200: { description: 'the thread, renamed', schema: ThreadSchema } },
    handler: ({ params, body, ctx }) => threadsService.rename(ctx.principal, params.id, body),
  });

  api.route({
    method: 'get',
    path: '/threads/{id}/checkpoints',
    operationId: 'listThreadCheckpoints',
    tag: 'threads',
    summary:
      "A thread's history, oldest first: every checkpoint of each of its runs and branches (after each step, at each gate), with the state there",
    params: IdParams,
    query: z.object({
      limit: z.coerce.number().int().min(1).max(1000).default(200).meta({
        description: 'how many of the newest checkpoints to read (LangGraph input checkpoints count, unlisted)',
      }),
    }),
    responses: { 200: { description: 'the checkpoints, oldest first', schema: z.array(CheckpointSchema) } },
    handler: ({ params, query, ctx }) => threadsService.checkpoints(ctx.principal, params.id, query.limit),
  });

  api.route({
    method: 'delete',
    path: '/threads/{id}',
    operationId: 'deleteThread',
    tag: 'threads',
    summary: 'Delete a thread with its runs, nodes and checkpoints (active runs are cancelled first)',
    params: IdParams,
    errors: { 403: "needs the member role on the thread's project (forbidden)" },
    responses: { 204: { description: 'deleted' } },
    handler: async ({ params, ctx }) => {
      await threadsService.delete(ctx.principal, params.id);
    },
  });
}
