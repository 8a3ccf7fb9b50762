import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  MCP_SCOPE,
  OAUTH_ACCESS_PREFIX,
  OAUTH_ACCESS_TTL_S,
  OAUTH_REFRESH_PREFIX,
  OAUTH_REFRESH_TTL_S,
  OAUTH_REQUEST_TTL_S,
  OAUTH_TOKEN_PATTERN,
  type McpGrant,
} from '../contracts/oauth';
import { notFound } from '../contracts/errors';
import type { OauthClientRow, OauthRepository, OauthRequestRow } from '../db/oauth.repository';
import { getLogger } from '../log';
import { OauthRefusal } from './oauth-refusal';
import type { AuditLog } from './audit-log';
import { checkRedirectUri, fetchClientMetadataDocument, isMetadataDocumentId } from './client-metadata-document';
import { PUBLIC_VISITOR, type Principal } from './principal';

const log = getLogger('svc.auth');

/** What the service keeps of a token, a code or a consent cookie: its SHA-256, in hex. */
const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');
const secret = (prefix = '') => `${prefix}${randomBytes(32).toString('base64url')}`;

/** A client as the service knows it: what it registered, or what its metadata document says. */
export interface OauthClient {
  client_id: string;
  client_secret?: string;
  redirect_uris: string[];
  client_name?: string;
  client_uri?: string;
  token_endpoint_auth_method?: string;
  /** Known by its metadata document, served from the https address that is its id: its host vouches for it. */
  verified: boolean;
  [key: string]: unknown;
}

export interface OauthTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** What the consent page shows, and for whom. */
export interface ConsentView {
  request: OauthRequestRow;
  client: OauthClient;
  userId: string;
}

/** The name a client is shown by: the one it gave, else its metadata document's host, else its id. */
export function clientNameOf(client: OauthClient): string {
  if (typeof client.client_name === 'string' && client.client_name.trim()) return client.client_name.trim();
  if (client.verified) return new URL(client.client_id).host;
  return client.client_id;
}

export function toOauthClient(row: OauthClientRow): OauthClient {
  return {
    ...row.metadata,
    client_id: row.client_id,
    ...(row.client_secret ? { client_secret: row.client_secret } : {}),
    verified: row.kind === 'metadata_document',
  };
}

/** How often a process deletes expired requests and tokens: at most once a minute, as sign-ins and refreshes come. */
const SWEEP_EVERY_MS = 60_000;

/**
 * The authorization server of `/mcp` (docs/mcp.md#signing-in-with-oauth): a client's request waits while the person
 * signs in with the OpenID provider and allows it; its code is exchanged once, with PKCE (checked by the HTTP side);
 * the grant then lives until revoked, with access tokens of an hour and refresh tokens used once each. Tokens name the
 * person and the scope, never roles, and are good only for `resource`, this server's `/mcp`.
 */
export function mcpOauthService(deps: {
  rows: OauthRepository;
  resource: () => string;
  /** Fetches a client's metadata document (client-metadata-document.ts; a test's stand-in). */
  fetchDocument?: typeof fetchClientMetadataDocument;
  audit: AuditLog;
}) {
  const { rows, audit } = deps;
  const fetchDocument = deps.fetchDocument ?? fetchClientMetadataDocument;
  let lastSweep = 0;

  function sweepNowAndThen(): void {
    if (Date.now() - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = Date.now();
    rows.sweep().catch((error) => log.warn(`deleting expired OAuth requests and tokens failed: ${String(error)}`));
  }

  /** The resource a client asked for, which must be this server's `/mcp` (RFC 8707); none asked means it. */
  function resourceOf(asked: URL | undefined): string {
    const resource = deps.resource();
    if (asked === undefined) return resource;
    if (new URL(asked.href).href.replace(/\/$/, '') !== resource) {
      throw new OauthRefusal('invalid_target', `this server issues tokens for ${resource} only, not ${asked.href}`);
    }
    return resource;
  }

  async function issue(grantId: string, scopes: string[]): Promise<OauthTokens> {
    const access = secret(OAUTH_ACCESS_PREFIX);
    const refresh = secret(OAUTH_REFRESH_PREFIX);
    await rows.addToken({ sha256: digest(access), grantId, kind: 'access', ttlS: OAUTH_ACCESS_TTL_S });
    await rows.addToken({ sha256: digest(refresh), grantId, kind: 'refresh', ttlS: OAUTH_REFRESH_TTL_S });
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: OAUTH_ACCESS_TTL_S,
      refresh_token: refresh,
      scope: scopes.join(' '),
    };
  }

  /** The request and client a consent cookie opens, when the request is still waiting for it. */
  async function consentOf(requestId: string, cookie: string | undefined): Promise<ConsentView | undefined> {
    if (!cookie) return undefined;
    const request = await rows.openRequest(requestId);
    if (!request?.user_id || request.consent_sha256 !== digest(cookie)) return undefined;
    const client = await rows.client(request.client_id);
    return client && { request, client: toOauthClient(client), userId: request.user_id };
  }

  return {
    /** A registered client, or one known by its metadata document (fetched now when it is new or due again). */
    async client(clientId: string): Promise<OauthClient | undefined> {
      const kept = await rows.client(clientId);
      if (kept && !kept.stale) return toOauthClient(kept);
      if (!isMetadataDocumentId(clientId)) return undefined;
      const { metadata, keepS } = await fetchDocument(clientId);
      await rows.keepMetadataDocument(clientId, metadata, keepS);
      return { ...metadata, verified: true };
    },

    /** Keeps a dynamically registered client (RFC 7591), its redirect addresses checked. */
    async registerClient(client: OauthClient): Promise<void> {
      client.redirect_uris.forEach(checkRedirectUri);
      const { client_secret: secret, verified: _verified, ...metadata } = client;
      await rows.registerClient({ client_id: client.client_id, metadata, client_secret: secret ?? null });
      // Registration asks for no sign-in (RFC 7591): whoever registers is a visitor, recorded as one.
      await audit.record(PUBLIC_VISITOR, {
        action: 'oauth_client.registered',
        target: `OAuth client ${client.client_id}`,
        before: null,
        after: {
          client_id: client.client_id,
          client_name: metadata.client_name ?? null,
          client_uri: metadata.client_uri ?? null,
          redirect_uris: client.redirect_uris,
          token_endpoint_auth_method: metadata.token_endpoint_auth_method ?? null,
        },
      });
    },

    /**
     * Keeps a client's authorization request (its redirect_uri already matched one it registered) and answers its id,
     * which the sign-in carries to its callback.
     */
    async startRequest(
      client: OauthClient,
      params: { redirectUri: string; codeChallenge: string; state?: string; scopes: string[]; resource?: URL },
    ): Promise<string> {
      sweepNowAndThen();
      const unknown = params.scopes.filter((scope) => scope !== MCP_SCOPE);
      if (unknown.length) {
        throw new OauthRefusal(
          'invalid_scope',
          `unknown scope ${unknown.join(', ')}: this server offers "${MCP_SCOPE}"`,
        );
      }
      const id = secret();
      await rows.createRequest(
        {
          id,
          client_id: client.client_id,
          redirect_uri: params.redirectUri,
          code_challenge: params.codeChallenge,
          state: params.state ?? null,
          scopes: [MCP_SCOPE],
          resource: resourceOf(params.resource),
        },
        OAUTH_REQUEST_TTL_S,
      );
      return id;
    },

    /** The person signed in for a request: answers the consent cookie her browser keeps until she allows it. */
    async signedIn(requestId: string, userId: string): Promise<string | undefined> {
      const cookie = secret();
      return (await rows.signedIn(requestId, userId, digest(cookie))) ? cookie : undefined;
    },

    consentOf,

    /**
     * She allowed it: the client's redirect with its code (and `iss`, RFC 9207). Undefined when the request is gone,
     * late or was answered, or the cookie is not the one her sign-in gave.
     */
    async allow(requestId: string, cookie: string | undefined, issuer: string): Promise<string | undefined> {
      const view = await consentOf(requestId, cookie);
      if (!view) return undefined;
      const code = secret();
      if (!(await rows.allow(requestId, digest(cookie!), digest(code)))) return undefined;
      log.info(`user=${view.userId} allowed MCP client ${view.client.client_id} to sign in`);
      const to = new URL(view.request.redirect_uri);
      to.searchParams.set('code', code);
      if (view.request.state !== null) to.searchParams.set('state', view.request.state);
      to.searchParams.set('iss', issuer);
      return to.href;
    },

    /** She refused it, or the sign-in failed: the client's redirect with `error`, and the request is gone. */
    async refuse(requestId: string, error: string, description: string, issuer: string): Promise<string | undefined> {
      const request = await rows.openRequest(requestId);
      if (!request) return undefined;
      await rows.deleteRequest(requestId);
      const to = new URL(request.redirect_uri);
      to.searchParams.set('error', error);
      to.searchParams.set('error_description', description);
      if (request.state !== null) to.searchParams.set('state', request.state);
      to.searchParams.set('iss', issuer);
      return to.href;
    },

    /** The PKCE challenge of a live code of this client's, without using the code. */
    async challengeOf(client: OauthClient, code: string): Promise<string> {
      const request = await rows.requestOfCode(digest(code), client.client_id);
      if (!request) throw new OauthRefusal('invalid_grant', 'the authorization code is unknown, used or expired');
      return request.code_challenge;
    },

    /** Uses a code (its PKCE verifier already checked): a grant for the person who allowed it, and its tokens. */
    async exchangeCode(client: OauthClient, code: string, redirectUri?: string, resource?: URL): Promise<OauthTokens> {
      const request = await rows.takeCode(digest(code), client.client_id);
      if (!request?.user_id)
        throw new OauthRefusal('invalid_grant', 'the authorization code is unknown, used or expired');
      if (redirectUri !== undefined && redirectUri !== request.redirect_uri) {
        throw new OauthRefusal('invalid_grant', 'redirect_uri is not the one the authorization request gave');
      }
      if (resource !== undefined && resourceOf(resource) !== request.resource) {
        throw new OauthRefusal('invalid_target', 'resource is not the one the authorization request gave');
      }
      const grantId = randomUUID();
      await rows.createGrant({
        id: grantId,
        user_id: request.user_id,
        client_id: client.client_id,
        client_name: clientNameOf(client),
        scopes: request.scopes,
        resource: request.resource,
      });
      log.info(`MCP client ${client.client_id} signed in for user=${request.user_id} (grant ${grantId})`);
      return issue(grantId, request.scopes);
    },

    /** Uses a refresh token once: the next access and refresh tokens of its grant. */
    async refresh(client: OauthClient, refreshToken: string, scopes?: string[], resource?: URL): Promise<OauthTokens> {
      sweepNowAndThen();
      const used = OAUTH_TOKEN_PATTERN.test(refreshToken)
        ? await rows.useRefresh(digest(refreshToken), client.client_id)
        : undefined;
      if (used === 'reused') {
        log.warn(`a refresh token of MCP client ${client.client_id} was used twice: its grant is revoked`);
        throw new OauthRefusal('invalid_grant', 'the refresh token was used before: sign in again');
      }
      if (!used) throw new OauthRefusal('invalid_grant', 'the refresh token is unknown, used, revoked or expired');
      if (resource !== undefined && resourceOf(resource) !== used.resource) {
        throw new OauthRefusal('invalid_target', 'resource is not the one this grant is for');
      }
      const wider = (scopes ?? []).filter((scope) => !used.scopes.includes(scope));
      if (wider.length) throw new OauthRefusal('invalid_scope', `this grant does not include ${wider.join(', ')}`);
      return issue(used.grant_id, used.scopes);
    },

    /** Revokes a token a client holds (RFC 7009): nothing happens for one unknown. */
    async revoke(client: OauthClient, token: string): Promise<void> {
      if (OAUTH_TOKEN_PATTERN.test(token)) await rows.revokeToken(digest(token), client.client_id);
    },

    /**
     * The person an access token acts for, and the resource it is for; undefined for a token that is not live. Its
     * grant's last use is written at most once a minute.
     */
    async principalOf(
      token: string,
    ): Promise<{ principal: Principal; resource: string; clientId: string; scopes: string[] } | undefined> {
      if (!OAUTH_TOKEN_PATTERN.test(token) || !token.startsWith(OAUTH_ACCESS_PREFIX)) return undefined;
      const found = await rows.liveAccess(digest(token));
      if (!found) return undefined;
      if (found.stale) await rows.touchGrant(found.grant_id);
      return {
        principal: {
          id: found.user_id,
          kind: 'session',
          via: 'oauth',
          name: found.name ?? found.email ?? found.user_id,
          email: found.email ?? undefined,
          instanceAdmin: false,
        },
        resource: found.resource,
        clientId: found.client_id,
        scopes: found.scopes,
      };
    },

    /** The MCP clients a person signed in, for Settings. */
    async grants(principal: Principal): Promise<McpGrant[]> {
      return signsIn(principal) ? rows.grantsOf(principal.id) : [];
    },

    /** Ends one of her grants: its tokens answer 401 from now on. */
    async revokeGrant(principal: Principal, id: string): Promise<void> {
      const grant = signsIn(principal) ? (await rows.grantsOf(principal.id)).find((g) => g.id === id) : undefined;
      if (!grant || !(await rows.revokeGrant(principal.id, id))) {
        throw notFound(`MCP client sign-in ${id} not found`);
      }
      log.info(`MCP client sign-in ${id} revoked by user=${principal.id}`);
      await audit.record(principal, {
        action: 'oauth_grant.revoked',
        target: `MCP client sign-in ${id}`,
        before: { id, client_id: grant.client_id, client_name: grant.client_name, scopes: grant.scopes },
        after: null,
      });
    },
  };
}

/** Only a person who signs in has grants: the built-in principals never sign a client in, and have none. */
const signsIn = (principal: Principal) => principal.kind === 'session';

export type McpOauthService = ReturnType<typeof mcpOauthService>;
