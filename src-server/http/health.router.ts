import { HealthSchema, type Health } from '../contracts/health';
import { pingDatabase } from '../db/pool';
import { localRuntimeStatus } from '../models/model-catalog';
import type { Api } from './api';
import type { AppDeps } from './deps';

export function healthRoutes(api: Api, deps: AppDeps): void {
  api.route({
    method: 'get',
    path: '/health',
    tag: 'service',
    summary: "Database and local runtime status, the runtime's models, and how many agents and commands are loaded",
    public: true,
    responses: {
      200: { description: 'service status', schema: HealthSchema },
      503: { description: 'the database is unreachable (same body, status degraded)', schema: HealthSchema },
    },
    handler: async ({ res }): Promise<Health> => {
      const [database, local] = await Promise.all([pingDatabase(deps.pool), localRuntimeStatus(deps.config)]);
      // Load balancers read the status code: a server without its database cannot serve.
      if (!database.ok) res.status(503);
      return {
        status: database.ok ? 'ok' : 'degraded',
        version: deps.version,
        database,
        local_runtime: { base_url: deps.config.LOCAL_LLM_BASE, ...local },
        ...deps.catalog.counts(),
        auth: { enabled: deps.auth.enabled, oidc: Boolean(deps.config.OIDC_ISSUER_URL) },
      };
    },
  });
}
