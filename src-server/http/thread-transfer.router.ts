import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import { ThreadSchema } from '../contracts/runs';
import { ThreadExportSchema } from '../contracts/thread-transfer';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });

/** A thread carried to another installation: exported as one JSON document, imported as read-only history. */
export function threadTransferRoutes(api: Api, { threadTransfer, config }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/threads/{id}/export',
    operationId: 'exportThread',
    tag: 'threads',
    summary:
      'The thread as one JSON document: its runs with their node rows, stored events and tool calls, its decisions and its checkpoints',
    description:
      'Read in one snapshot: a run that goes on meanwhile is exported as it stood. Model usage, tool grants and the ' +
      'project folders are left out (`left_out` says so). POST /projects/{id}/threads/import takes the document.',
    params: IdParams,
    responses: { 200: { description: 'the document', schema: ThreadExportSchema } },
    handler: ({ params, ctx }) => threadTransfer.exportThread(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/projects/{id}/threads/import',
    operationId: 'importThread',
    tag: 'threads',
    summary: 'Import an exported thread into the project as read-only history',
    description:
      'A new thread of the project, in one transaction, whose runs, events, decisions, node rows and checkpoints are ' +
      "the document's, under new ids (every reference following them), without project folders. Nothing in it " +
      'runs: a run that was running or waiting is kept as it was recorded and never resumed, and starting, deciding, ' +
      'forking or cancelling a run of it answers 409. No webhook, Slack message or mail is sent for it. The body may ' +
      'be as large as THREAD_IMPORT_LIMIT.',
    params: IdParams,
    query: z.object({
      keep_ids: z
        .enum(['true', 'false'])
        .default('false')
        .meta({
          description:
            "true (instance administrators only): the thread, its runs and decisions keep the document's ids; 409 " +
            'when one of them exists here already',
        }),
    }),
    body: ThreadExportSchema,
    bodyLimit: config.THREAD_IMPORT_LIMIT,
    errors: {
      400: 'the body is not a thread export this server imports (another format or version, or a row it cannot hold), or a field is wrong (invalid_request); nothing was imported',
      403: 'needs the member role on the project; keep_ids=true needs an instance administrator (forbidden)',
      404: 'no such project, or it is not visible to the caller (not_found)',
      409: 'keep_ids=true and the thread, a run or a decision of the document exists here already (conflict)',
      413: 'the body is larger than THREAD_IMPORT_LIMIT (payload_too_large)',
    },
    responses: { 201: { description: 'the imported thread', schema: ThreadSchema } },
    handler: ({ params, query, body, ctx }) =>
      threadTransfer.importThread(ctx.principal, params.id, body, { keepIds: query.keep_ids === 'true' }),
  });
}
