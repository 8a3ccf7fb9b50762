import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import { ProjectRetentionSchema, RetentionSettingsSchema } from '../contracts/retention';
import type { Api } from './api';
import type { AppDeps } from './deps';

const ProjectParams = z.object({ project_id: UuidSchema });

/** GET/PUT /projects/{project_id}/retention (docs/retention.md). */
export function retentionRoutes(api: Api, { retention }: AppDeps): void {
  const tag = 'tenancy';
  api.route({
    method: 'get',
    path: '/projects/{project_id}/retention',
    operationId: 'getProjectRetention',
    tag,
    summary: "How long the project's finished threads are kept, and whether their checkpoints are pruned",
    params: ProjectParams,
    responses: {
      200: {
        description: "the project's retention (the defaults until an owner saves)",
        schema: ProjectRetentionSchema,
      },
    },
    handler: ({ params, ctx }) => retention.get(ctx.principal, params.project_id),
  });
  api.route({
    method: 'put',
    path: '/projects/{project_id}/retention',
    operationId: 'setProjectRetention',
    tag,
    summary: "Set how long the project's finished threads are kept, and whether their checkpoints are pruned (owners)",
    params: ProjectParams,
    body: RetentionSettingsSchema,
    errors: { 403: 'needs the owner role on the project (forbidden)' },
    responses: { 200: { description: "the project's retention as saved", schema: ProjectRetentionSchema } },
    handler: ({ params, body, ctx }) => retention.save(ctx.principal, params.project_id, body),
  });
}
