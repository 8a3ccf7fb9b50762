import { DATABASE_UNAVAILABLE } from '../contracts/errors';
import { HealthSchema, type Health } from '../contracts/health';
import { localRuntimeStatus } from '../models/model-catalog';
import { RETRY_AFTER, type Api } from './api';
import type { AppDeps } from './deps';

export function healthRoutes(api: Api, deps: AppDeps): void {
  api.route({
    method: 'get',
    path: '/health',
    operationId: 'getHealth',
    tag: 'service',
    summary: "Database and local runtime status, the runtime's models, and how many agents and commands are loaded",
    public: true,
    responses: {
      200: { description: 'service status', schema: HealthSchema },
      503: {
        description: 'the database is unreachable (same body, status degraded): ask again after Retry-After',
        schema: HealthSchema,
        headers: RETRY_AFTER,
      },
    },
    handler: async ({ res }): Promise<Health> => {
      // Public, so it names no internal address: not the runtime's, not the database's (a driver's error says
      // "connect ECONNREFUSED 10.0.0.5:5432"). /models, for signed-in callers, shows the runtime's address.
      const [database, local] = await Promise.all([
        deps.health.database(),
        localRuntimeStatus(deps.config, { showAddress: false }),
      ]);
      // Load balancers read the status code: a server without its database cannot serve.
      if (!database.ok) res.status(503).set('Retry-After', String(DATABASE_UNAVAILABLE.retryAfterS));
      return {
        status: database.ok ? 'ok' : 'degraded',
        version: deps.version,
        database: database.ok ? { ok: true } : { ok: false, error: 'the database does not answer' },
        schema_version: database.schemaVersion,
        local_runtime: local,
        ...deps.agents.catalog.counts(),
        auth: { enabled: deps.auth.enabled, oidc: Boolean(deps.config.OIDC_ISSUER_URL) },
        stdio_mcp_servers: deps.stdioMcpServers,
      };
    },
  });
}
