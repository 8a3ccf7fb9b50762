import { z } from 'zod';
import { ReasonBodySchema, UuidSchema } from '../contracts/common';
import {
  LocalModelsSchema,
  ModelNameBodySchema,
  ModelPullSchema,
  ModelsSchema,
  PullModelBodySchema,
  QueueStatusSchema,
} from '../contracts/models';
import { listModels } from '../models/model-catalog';
import type { Api } from './api';
import type { AppDeps } from './deps';

export function modelRoutes(api: Api, { config, queue, access, localModels }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/models',
    operationId: 'listModels',
    tag: 'models',
    summary: 'All models grouped by provider, with whether each provider is configured',
    responses: { 200: { description: 'models by provider', schema: ModelsSchema } },
    handler: () => listModels(config, localModels.defaultModelId()),
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

  const MANAGER = { 403: 'needs the instance administrator (forbidden)' } as const;
  const PullParams = z.object({ id: UuidSchema });

  api.route({
    method: 'get',
    path: '/models/local',
    operationId: 'listLocalModels',
    tag: 'models',
    summary:
      "The local runtime's models with what it reports (size, family, quantisation, context, capabilities, loaded) and what this service measured, and the pulls under way",
    responses: { 200: { description: 'the local models', schema: LocalModelsSchema } },
    handler: ({ ctx }) => localModels.list(ctx.principal),
  });

  api.route({
    method: 'post',
    path: '/models/local/pulls',
    operationId: 'pullLocalModel',
    tag: 'models',
    summary:
      'Pull a model into the local runtime; the pull goes on in the background, its progress at GET /models/local/pulls/{id}',
    body: PullModelBodySchema,
    errors: {
      ...MANAGER,
      400: "not a model name, or its registry host is on the server's own network (invalid_request)",
      409: 'the model is being pulled already (conflict)',
      503: 'the local runtime is unreachable, or the database (unavailable, database_unavailable)',
    },
    responses: { 202: { description: 'the pull, started', schema: ModelPullSchema } },
    handler: ({ body, ctx }) => localModels.pull(ctx.principal, body.name),
  });

  api.route({
    method: 'get',
    path: '/models/local/pulls/{id}',
    operationId: 'getLocalModelPull',
    tag: 'models',
    summary: "A pull's progress: the runtime's status line and the bytes so far, on any process",
    params: PullParams,
    errors: MANAGER,
    responses: { 200: { description: 'the pull', schema: ModelPullSchema } },
    handler: ({ params, ctx }) => localModels.pullStatus(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/models/local/pulls/{id}/cancel',
    operationId: 'cancelLocalModelPull',
    tag: 'models',
    summary: 'Cancel a pull under way, on whichever process runs it',
    params: PullParams,
    errors: { ...MANAGER, 409: 'the pull has ended (conflict)' },
    responses: { 200: { description: 'the pull, asked to stop', schema: ModelPullSchema } },
    handler: ({ params, ctx }) => localModels.cancel(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/models/local/delete',
    operationId: 'deleteLocalModel',
    tag: 'models',
    summary: 'Delete a model from the local runtime',
    body: ModelNameBodySchema,
    errors: {
      ...MANAGER,
      404: 'the runtime has no such model (not_found)',
      503: 'the local runtime is unreachable, or the database (unavailable, database_unavailable)',
    },
    responses: { 204: { description: 'deleted' } },
    handler: async ({ body, ctx }) => {
      await localModels.remove(ctx.principal, body.model);
    },
  });

  api.route({
    method: 'put',
    path: '/models/default',
    operationId: 'setDefaultModel',
    tag: 'models',
    summary: 'Choose the model runs use when neither they nor their thread name one (over DEFAULT_MODEL)',
    body: ModelNameBodySchema,
    errors: {
      ...MANAGER,
      400: "invalid request, or the model's provider is not configured (invalid_request)",
      404: 'a local model the runtime does not have (not_found)',
    },
    responses: { 200: { description: 'the default model now', schema: ModelNameBodySchema } },
    handler: async ({ body, ctx }) => ({ model: await localModels.setDefault(ctx.principal, body.model) }),
  });
}
