import { ReasonBodySchema } from '../contracts/common';
import { ModelsSchema, QueueStatusSchema } from '../contracts/models';
import { listModels } from '../models/model-catalog';
import type { Api } from './api';
import type { AppDeps } from './deps';

export function modelRoutes(api: Api, { config, queue, access }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/models',
    operationId: 'listModels',
    tag: 'models',
    summary: 'All models grouped by provider, with whether each provider is configured',
    responses: { 200: { description: 'models by provider', schema: ModelsSchema } },
    handler: () => listModels(config),
  });

  api.route({
    method: 'get',
    path: '/queue/status',
    operationId: 'getQueueStatus',
    tag: 'models',
    summary: 'Live statistics of the local-runtime queue, across every server process on the database',
    responses: { 200: { description: 'queue figures', schema: QueueStatusSchema } },
    handler: () => queue.status(),
  });

  api.route({
    method: 'post',
    path: '/queue/reset',
    operationId: 'resetQueue',
    tag: 'models',
    summary:
      'Forget the slots held and the counters of the local-runtime queue (a stuck slot); runs and checkpoints are unchanged',
    body: ReasonBodySchema,
    errors: {
      403: 'needs the owner role on the default organisation (forbidden)',
      404: 'the caller holds no role on the default organisation (not_found)',
    },
    responses: { 200: { description: 'the queue after the reset', schema: QueueStatusSchema } },
    handler: async ({ body, ctx }) => {
      // Counters are the whole instance's: the default organisation's admins and owners may reset them.
      await access.requireOrgRole(ctx.principal, await access.orgIdOfProject(await access.defaultProjectId()), 'owner');
      return queue.reset(`${body.reason ?? 'no reason given'} (by ${ctx.principal.name})`);
    },
  });
}
