import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import { OauthRefusal } from '../../auth/oauth-refusal';
import { withRequestOrigin } from '../../auth/request-origin';
import { MCP_SCOPE } from '../../contracts/oauth';
import { errorBody, notFound } from '../../contracts/errors';
import type { Api } from '../api';
import type { AppDeps, McpOauthServer } from '../deps';
import { beginSignIn, CONSENT_COOKIE, CONSENT_PATH, readCookie, redirect } from '../sign-in';
import { consentGonePage, consentPage, consentPageHeaders } from './consent-page';
import { oauthProvider } from './oauth-provider';

/** The protocol's endpoints, served by the SDK's handlers (docs/mcp.md#signing-in-with-oauth). */
export const OAUTH_ENDPOINTS = {
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
} as const;

const NO_SERVER =
  'this server has no authorization server: it signs people in with OIDC_ISSUER_URL, which is not set; MCP clients ' +
  'send a personal access token';

const AuthorizationServerMetadataSchema = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    registration_endpoint: z.string(),
    revocation_endpoint: z.string(),
    response_types_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    client_id_metadata_document_supported: z.boolean(),
    authorization_response_iss_parameter_supported: z.boolean(),
    service_documentation: z.string(),
  })
  .meta({ id: 'AuthorizationServerMetadata' });

const ConsentQuerySchema = z.object({ request: z.string().min(1).max(100) });
const ConsentFormSchema = z
  .object({ request: z.string().min(1).max(100), decision: z.enum(['allow', 'deny']) })
  .meta({ id: 'OauthConsentForm' });
const PAGE = { contentType: 'text/html', schema: z.string() };

/** The authorization server's metadata (RFC 8414), from its issuer: PUBLIC_URL, never a request's Host. */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}${OAUTH_ENDPOINTS.authorize}`,
    token_endpoint: `${issuer}${OAUTH_ENDPOINTS.token}`,
    registration_endpoint: `${issuer}${OAUTH_ENDPOINTS.register}`,
    revocation_endpoint: `${issuer}${OAUTH_ENDPOINTS.revoke}`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post'],
    scopes_supported: [MCP_SCOPE],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${issuer}/docs`,
  };
}

/** The metadata and the consent page, declared in the API's document. */
export function oauthRoutes(api: Api, { mcpOauth, users }: AppDeps): void {
  const tag = 'mcp';
  const server = (): McpOauthServer => {
    if (!mcpOauth) throw notFound(NO_SERVER);
    return mcpOauth;
  };

  api.route({
    method: 'get',
    path: '/.well-known/oauth-authorization-server',
    operationId: 'getAuthorizationServerMetadata',
    tag,
    public: true,
    summary:
      'The authorization server that signs MCP clients in to /mcp (RFC 8414), on a server that signs in with OIDC',
    errors: { 404: `${NO_SERVER} (not_found)` },
    responses: { 200: { description: 'the metadata', schema: AuthorizationServerMetadataSchema } },
    handler: () => authorizationServerMetadata(server().issuer()),
  });

  api.route({
    method: 'get',
    path: CONSENT_PATH,
    operationId: 'openOauthConsent',
    tag,
    public: true,
    pageErrors: true,
    summary: 'The page that asks the person who just signed in whether an MCP client may act as her (HTML)',
    query: ConsentQuerySchema,
    errors: {
      404: `${NO_SERVER} (not_found)`,
      409: 'the request expired, was answered, or is another browser’s (conflict)',
    },
    responses: { 200: { description: 'the client, what it may do, Allow and Deny', ...PAGE } },
    handler: async ({ query, req, res }) => {
      const view = await server().service.consentOf(query.request, readCookie(req, CONSENT_COOKIE));
      if (!view) return page(req, res, 409, consentGonePage());
      const user = await users.get(view.userId);
      const html = consentPage(view, user?.name ?? user?.email ?? 'you');
      page(req, res, 200, html, consentPageHeaders(view.request.redirect_uri));
    },
  });

  api.route({
    method: 'post',
    path: CONSENT_PATH,
    operationId: 'answerOauthConsent',
    tag,
    public: true,
    form: true,
    pageErrors: true,
    summary: "Allow or deny an MCP client: back to the client's redirect_uri with a code, or with access_denied",
    body: ConsentFormSchema,
    errors: {
      404: `${NO_SERVER} (not_found)`,
      409: 'the request expired, was answered, or is another browser’s (conflict)',
    },
    responses: {
      303: {
        description: "to the client's redirect_uri, with `code`, `state` and `iss`, or with `error=access_denied`",
        headers: { Location: { description: "the client's redirect_uri", schema: { type: 'string' } } },
      },
    },
    handler: async ({ body, req, res }) => {
      const { service, issuer } = server();
      const cookie = readCookie(req, CONSENT_COOKIE);
      const view = await service.consentOf(body.request, cookie);
      const back =
        view &&
        (body.decision === 'allow'
          ? await service.allow(body.request, cookie, issuer())
          : await service.refuse(body.request, 'access_denied', 'the person denied the request', issuer()));
      if (!back) return page(req, res, 409, consentGonePage());
      res.clearCookie(CONSENT_COOKIE, { path: CONSENT_PATH, secure: req.secure });
      redirect(res, back, 303);
    },
  });
}

/** A consent answer: the page to a browser, under its own headers; the error envelope to any other client. */
function page(req: Request, res: Response, status: number, html: string, headers = consentPageHeaders()): void {
  res.set(headers).status(status);
  if (status < 300 || req.accepts(['json', 'html']) === 'html') res.type('html').send(html);
  else res.json(errorBody('conflict', 'this sign-in request expired, was answered, or is another browser’s'));
}

/**
 * A database that is down answers 503, as everywhere in the service: the SDK's handlers answer an OAuth error in a
 * 400 (or 500), so the one they are given for it (`temporarily_unavailable`) is sent with its own status here.
 */
const unavailableIs503: RequestHandler = (_req, res, next) => {
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    if ((body as { error?: unknown } | null)?.error === 'temporarily_unavailable')
      res.status(503).set('Retry-After', '5');
    return json(body);
  };
  next();
};

/**
 * The protocol's endpoints (authorize, token, register, revoke) on the SDK's own handlers, built at their first
 * request (the SDK loads in about half a second; a server nobody signs into never pays it). Without OIDC they answer
 * 404. Each is rate-limited per client address, in this process.
 */
export function oauthProtocolRouter(deps: AppDeps): Router {
  const router = express.Router();
  let handlers: Promise<Router> | undefined;
  const build = async (server: McpOauthServer): Promise<Router> => {
    const [errors, authorize, token, register, revoke] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/auth/errors.js'),
      import('@modelcontextprotocol/sdk/server/auth/handlers/authorize.js'),
      import('@modelcontextprotocol/sdk/server/auth/handlers/token.js'),
      import('@modelcontextprotocol/sdk/server/auth/handlers/register.js'),
      import('@modelcontextprotocol/sdk/server/auth/handlers/revoke.js'),
    ]);
    const provider = oauthProvider(errors, server.service, async (res, requestId) => {
      try {
        await beginSignIn(deps.oidc!, deps.auth, res.req, res, { oauth_request: requestId });
      } catch {
        throw new OauthRefusal('temporarily_unavailable', 'the identity provider cannot be reached: try again soon');
      }
    });
    // Per client address (behind a proxy, the one TRUST_PROXY lets it tell): registration keeps the SDK's 20 an hour;
    // sign-ins and token requests allow a team behind one address. express-rate-limit's own checks of the proxy
    // settings would print to the console: TRUST_PROXY is checked at start.
    const limits = (max?: number) => ({ validate: false, ...(max ? { max } : {}) });
    const routes = express.Router();
    routes.use(unavailableIs503);
    routes.use(OAUTH_ENDPOINTS.authorize, authorize.authorizationHandler({ provider, rateLimit: limits(300) }));
    routes.use(OAUTH_ENDPOINTS.token, token.tokenHandler({ provider, rateLimit: limits(600) }));
    routes.use(
      OAUTH_ENDPOINTS.register,
      register.clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: limits() }),
    );
    routes.use(OAUTH_ENDPOINTS.revoke, revoke.revocationHandler({ provider, rateLimit: limits(600) }));
    return routes;
  };
  router.all(Object.values(OAUTH_ENDPOINTS), (req, res, next) => {
    if (!deps.mcpOauth) {
      res.status(404).json({ error: 'invalid_request', error_description: NO_SERVER });
      return;
    }
    handlers ??= build(deps.mcpOauth);
    // A client's registration is in the audit log, with the address it came from.
    handlers.then((routes) => withRequestOrigin({ ip: req.ip ?? null }, () => routes(req, res, next)), next);
  });
  return router;
}
