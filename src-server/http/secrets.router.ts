import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import { SecretListSchema, SecretNameParams, SecretSchema, SetSecretSchema } from '../contracts/secrets';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });
const OWNER = 'needs the owner or admin role on the scope (forbidden)';
const HOW =
  'A tool server that declares a variable of this name gets it in runs of the scope: a project secret first, then ' +
  "the organisation's, then the service's environment. The value is never answered back, logged or shown.";

/** Secrets per project and organisation (docs/tools.md#secrets): names readable, values never. */
export function secretRoutes(api: Api, { secrets }: Pick<AppDeps, 'secrets'>): void {
  const tag = 'secrets';
  for (const scope of ['project', 'org'] as const) {
    const base = scope === 'project' ? '/projects/{id}/secrets' : '/orgs/{id}/secrets';
    const suffix = scope === 'project' ? '' : 'Org';
    const whose = scope === 'project' ? "a project's" : "an organisation's";

    api.route({
      method: 'put',
      path: `${base}/{name}`,
      operationId: `set${suffix}Secret`,
      tag,
      summary: `Set ${whose} secret (its value is never read back)`,
      description: HOW,
      params: SecretNameParams,
      body: SetSecretSchema,
      errors: { 403: OWNER },
      responses: { 200: { description: 'set; its name and when', schema: SecretSchema } },
      handler: ({ params, body, ctx }) =>
        secrets.set(ctx.principal, { type: scope, id: params.id }, params.name, body.value),
    });

    api.route({
      method: 'get',
      path: base,
      operationId: `list${suffix}Secrets`,
      tag,
      summary: `${whose[0]!.toUpperCase()}${whose.slice(1)} secrets: their names and when each was set`,
      params: IdParams,
      errors: { 403: OWNER },
      responses: { 200: { description: 'the names, alphabetically', schema: SecretListSchema } },
      handler: ({ params, ctx }) => secrets.list(ctx.principal, { type: scope, id: params.id }),
    });

    api.route({
      method: 'delete',
      path: `${base}/{name}`,
      operationId: `delete${suffix}Secret`,
      tag,
      summary: `Delete ${whose} secret`,
      params: SecretNameParams,
      errors: { 403: OWNER },
      responses: { 204: { description: 'deleted: the next call falls back to the next scope' } },
      handler: ({ params, ctx }) => secrets.remove(ctx.principal, { type: scope, id: params.id }, params.name),
    });
  }
}
