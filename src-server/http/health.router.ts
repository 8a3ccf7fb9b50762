import { HealthSchema, type Health } from '../contracts/health';
import { pingDatabase } from '../db/pool';
import type { Api } from './api';
import type { AppDeps } from './app';

export function healthRoutes(api: Api, deps: AppDeps): void {
  api.route({
    method: 'get',
    path: '/health',
    tag: 'service',
    summary: 'Database and local runtime status, and how many agents and commands are loaded',
    public: true,
    responses: {
      200: { description: 'service status', schema: HealthSchema },
      503: { description: 'the database is unreachable (same body, status degraded)', schema: HealthSchema },
    },
    handler: async ({ res }): Promise<Health> => {
      const database = await pingDatabase(deps.pool);
      // Load balancers read the status code: a server without its database cannot serve.
      if (!database.ok) res.status(503);
      return {
        status: database.ok ? 'ok' : 'degraded',
        version: deps.version,
        database,
        ...deps.catalog.counts(),
        auth: { enabled: deps.auth.enabled, oidc: Boolean(deps.config.OIDC_ISSUER_URL) },
      };
    },
  });
}
