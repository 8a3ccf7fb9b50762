import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import {
  CreatedWebhookSchema,
  CreateWebhookSchema,
  DeliverySchema,
  WebhookSchema,
  WebhookScopeQuerySchema,
} from '../contracts/webhooks';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });
const NEEDS_ADMIN = 'needs the admin role on the project or organisation (forbidden)';

/** POST/GET /webhooks, DELETE /webhooks/{id} and GET /webhooks/{id}/deliveries (docs/webhooks.md). */
export function webhookRoutes(api: Api, { webhooks }: AppDeps): void {
  const tag = 'webhooks';
  api.route({
    method: 'post',
    path: '/webhooks',
    operationId: 'createWebhook',
    tag,
    summary:
      "Register a URL for a project's or an organisation's gate and run events; the answer shows the signing secret, once",
    body: CreateWebhookSchema,
    errors: {
      400:
        'invalid request (invalid_request): a field fails its schema, neither or both of project_id and org_id, or ' +
        "a URL that is not http(s), carries credentials or leads to the server's own network",
      403: NEEDS_ADMIN,
      404: 'the project or organisation is not visible to the caller (not_found)',
      409: 'the project or organisation already has WEBHOOK_MAX_PER_SCOPE webhooks of its own (conflict)',
    },
    responses: { 201: { description: 'registered; `secret` is not shown again', schema: CreatedWebhookSchema } },
    handler: async ({ body, ctx, res }) => {
      const created = await webhooks.create(ctx.principal, body);
      // A credential: no cache keeps it.
      res.setHeader('Cache-Control', 'no-store');
      return created;
    },
  });

  api.route({
    method: 'get',
    path: '/webhooks',
    operationId: 'listWebhooks',
    tag,
    summary: 'The webhooks of one project (?project_id=) or organisation (?org_id=), without their secrets',
    query: WebhookScopeQuerySchema,
    errors: { 403: NEEDS_ADMIN, 404: 'the project or organisation is not visible to the caller (not_found)' },
    responses: { 200: { description: 'the webhooks registered on that scope', schema: z.array(WebhookSchema) } },
    handler: ({ query, ctx }) => webhooks.list(ctx.principal, query),
  });

  api.route({
    method: 'delete',
    path: '/webhooks/{id}',
    operationId: 'deleteWebhook',
    tag,
    summary: 'Remove a webhook, with its deliveries: nothing more is sent to it',
    params: IdParams,
    errors: { 403: NEEDS_ADMIN },
    responses: { 204: { description: 'removed' } },
    handler: async ({ params, ctx }) => {
      await webhooks.remove(ctx.principal, params.id);
    },
  });

  api.route({
    method: 'get',
    path: '/webhooks/{id}/deliveries',
    operationId: 'listWebhookDeliveries',
    tag,
    summary: "A webhook's deliveries, newest first, each with every attempt (time, status or error, duration)",
    params: IdParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
    errors: { 403: NEEDS_ADMIN },
    responses: { 200: { description: 'the deliveries', schema: z.array(DeliverySchema) } },
    handler: ({ params, query, ctx }) => webhooks.deliveries(ctx.principal, params.id, query.limit),
  });
}
