import express, { type Express } from 'express';
import { Api, apiVersionHeader } from './api';
import type { AppDeps } from './deps';
import { docsRouter } from './docs.router';
import { errorHandler, notFoundHandler } from './errors';
import { assetRoutes, phaseConfigRoutes } from './assets.router';
import { authRoutes } from './auth.router';
import { cors, loopbackHostGuard, pathEncodingGuard } from './guards';
import { tenancyRoutes } from './tenancy.router';
import { foldersRoutes } from './folders.router';
import { agentRoutes } from './agents.router';
import { orgToolPoliciesRoutes } from './org-tool-policies.router';
import { mcpServersRoutes } from './mcp-servers.router';
import { retentionRoutes } from './retention.router';
import { healthRoutes } from './health.router';
import { metricsRoutes } from './metrics.router';
import { securityHeaders } from './security-headers';
import { modelRoutes } from './models.router';
import { approvalRoutes } from './approvals.router';
import { slackRoutes } from './slack.router';
import { emailRoutes } from './email.router';
import { runRoutes } from './runs.router';
import { comparisonRoutes } from './comparisons.router';
import { datasetRoutes } from './datasets.router';
import { threadRoutes } from './threads.router';
import { threadTransferRoutes } from './thread-transfer.router';
import { tokenRoutes } from './tokens.router';
import { webhookRoutes } from './webhooks.router';
import { scheduleRoutes } from './schedules.router';
import { usageRoutes } from './usage.router';
import { budgetRoutes } from './budgets.router';
import { secretRoutes } from './secrets.router';
import { auditRoutes } from './audit.router';
import { mcpRouter } from './mcp/mcp.router';
import { langgraphRoutes, lgApiKeyHeader, LG_PREFIX } from './langgraph/langgraph.routes';
import { resourceMetadataRoutes } from './mcp/resource-metadata';
import { oauthProtocolRouter, oauthRoutes } from './oauth/oauth.router';
import { portalRouter } from './portal.router';
import { studioRouter } from './studio.router';
import { limitsOf, rateLimits } from './rate-limits';

/**
 * Every route of the API, declared once: the router that serves them and the OpenAPI document both come from it.
 * Declaring reads no dependency (only handlers do), so the document can be built without a database.
 */
export function buildApi(deps: AppDeps): Api {
  const api = new Api(deps.auth, deps.config.BODY_LIMIT, deps.idempotencyKeys);
  healthRoutes(api, deps);
  metricsRoutes(api, deps);
  assetRoutes(api, deps);
  phaseConfigRoutes(api, deps);
  agentRoutes(api, deps.agentsService);
  modelRoutes(api, deps);
  authRoutes(api, deps, { oidc: deps.oidc, users: deps.users });
  tokenRoutes(api, deps);
  tenancyRoutes(api, deps.tenancy);
  foldersRoutes(api, deps.projectFolders);
  orgToolPoliciesRoutes(api, deps.orgToolPolicies);
  mcpServersRoutes(api, deps.mcpRegistry);
  retentionRoutes(api, deps);
  runRoutes(api, deps);
  comparisonRoutes(api, deps);
  datasetRoutes(api, deps);
  approvalRoutes(api, deps);
  slackRoutes(api, deps.slack);
  emailRoutes(api, deps.email);
  threadRoutes(api, deps);
  threadTransferRoutes(api, deps);
  webhookRoutes(api, deps);
  scheduleRoutes(api, deps);
  usageRoutes(api, deps);
  budgetRoutes(api, deps);
  secretRoutes(api, deps);
  auditRoutes(api, deps);
  langgraphRoutes(api, deps);
  resourceMetadataRoutes(api, deps);
  oauthRoutes(api, deps);
  api.page({
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI document',
    description: 'the OpenAPI 3.1 document of this API',
    contentType: 'application/json',
  });
  api.page({
    path: '/docs',
    operationId: 'getApiDocs',
    summary: 'Interactive API docs (Swagger UI) on this document',
    description: 'an HTML page',
    contentType: 'text/html',
  });
  api.page({
    path: '/',
    operationId: 'getPortal',
    summary: 'What the service is, where the studio and the docs are, and examples with this server address',
    description: 'an HTML page',
    contentType: 'text/html',
  });
  return api;
}

/**
 * The document /openapi.json serves, without a server or a database (`npm run lint:openapi` writes it): route
 * declarations read no dependency, only their handlers do, and none runs here.
 */
export function openApiDocument(serviceVersion: string): object {
  const declarationsOnly = { version: serviceVersion, config: { BODY_LIMIT: '1mb' } } as unknown as AppDeps;
  return buildApi(declarationsOnly).openApiDocument({ serviceVersion });
}

/** Builds the Express app; listening, signals and shutdown belong to main.ts. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(apiVersionHeader);
  app.use(securityHeaders());
  // X-Forwarded-* (the client's address, and whether it came over TLS) only from proxies TRUST_PROXY names.
  app.set('trust proxy', deps.config.TRUST_PROXY);
  app.use(loopbackHostGuard(deps.config));
  app.use(cors(deps.config));
  app.use(pathEncodingGuard());
  // Before every door: a caller over her rate is answered at once, at the cost of a counter (none when limits are off).
  for (const limit of rateLimits(limitsOf(deps.config))) app.use(limit);

  const api = buildApi(deps);
  app.use(docsRouter(() => api.openApiDocument({ serviceVersion: deps.version })));
  app.use(portalRouter(deps.agents.catalog, deps.config.AUTH_ENABLED));
  app.use(studioRouter());
  app.use(oauthProtocolRouter(deps));
  app.use(
    mcpRouter(deps, {
      agents: deps.agents,
      access: deps.access,
      tenancy: deps.tenancy,
      runsService: deps.runsService,
      threadsService: deps.threadsService,
      approvals: deps.approvals,
      sessions: deps.mcpSessions,
      elicitationTimeoutS: deps.config.MCP_ELICITATION_TIMEOUT_S,
    }),
  );
  app.use(LG_PREFIX, lgApiKeyHeader);
  app.use(api.router);
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
