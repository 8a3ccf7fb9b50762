import { randomBytes, timingSafeEqual, createHash, hkdfSync } from 'node:crypto';
import type { Request } from 'express';
import { jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { INSECURE_SESSION_SECRET, type Config } from '../config';
import type { UsersRepository } from '../db/users.repository';
import type { PersonalTokensRepository } from '../db/personal-tokens.repository';
import { PERSONAL_TOKEN_PATTERN, PERSONAL_TOKEN_PREFIX } from '../contracts/auth';
import { getLogger, registerSecret } from '../log';
import { unauthorized } from '../contracts/errors';
import { ANONYMOUS_ADMIN, API_TOKEN_ADMIN, isBuiltInPrincipal, type Principal } from './principal';
import { personalTokenDigest } from './personal-tokens.service';
import type { McpOauthService } from './mcp-oauth.service';
import { OAUTH_ACCESS_PREFIX } from '../contracts/oauth';

const log = getLogger('svc.auth');
export const SESSION_ISSUER = 'agent-workflow-service';
/** Stream tokens have an issuer of their own, so a session check can never take one for a session. */
export const STREAM_ISSUER = 'agent-workflow-service/run-stream';
export const STREAM_AUDIENCE = 'svc-run-stream';
/**
 * How long a stream token may open a stream: longer than a run may last (10 minutes), so an EventSource that
 * reconnects during a run gets in again with the same address, and short enough that a leaked one soon dies.
 */
export const STREAM_TOKEN_TTL_S = 15 * 60;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface Authenticator {
  readonly enabled: boolean;
  /** The token generated at start when auth is on and nothing else is configured; shown in the studio link. */
  readonly generatedToken?: string;
  /**
   * The caller of a request: its bearer token. With `streamOf` (the run a stream route serves), a request without an
   * Authorization header may instead carry a stream token in `?access_token=`, for that run only (see
   * issueStreamToken). An OAuth access token an MCP client was given is taken only where `audience` is the resource
   * it was issued for (RFC 8707): `/mcp`, and nowhere else.
   */
  authenticate(req: Request, options?: { streamOf?: string; audience?: string }): Promise<Principal>;
  /**
   * A credential to follow one run's stream without an Authorization header (a browser's EventSource cannot send
   * one): a JWT for this caller and this run, valid STREAM_TOKEN_TTL_S seconds, accepted only as `?access_token=`
   * on GET /runs/{run}/stream. It is checked when a stream opens: a stream open at its expiry goes on.
   */
  issueStreamToken(principal: Principal, runId: string): Promise<{ token: string; expiresAt: Date }>;
  issueSession(user: { id: string; name: string; email?: string }): Promise<string>;
  /**
   * A key of its own for `purpose` (32 bytes, HKDF of the session secret): what the service signs for clients to hand
   * back (an MCP request's state), with the same key on every process that shares SESSION_SECRET, never the secret.
   */
  derivedKey(purpose: string): Uint8Array;
  /** Seals what a login must find again at its callback (PKCE verifier, state, nonce) for a cookie. */
  sealLogin(pending: Record<string, string>): Promise<string>;
  openLogin(sealed: string): Promise<Record<string, string>>;
}

/** Hashing first makes the comparison constant-time whatever the lengths. */
function sameSecret(a: string, b: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** The token of a request's `Authorization: Bearer <token>` header, or undefined when it has none. */
export function bearerToken(req: Request): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
}

/**
 * Whether the request's bearer token is `secret`, compared in constant time: for a route that takes a token of its
 * own instead of a caller's (GET /metrics and METRICS_TOKEN).
 */
export function bearerIs(req: Request, secret: string): boolean {
  const token = bearerToken(req);
  return token !== undefined && sameSecret(token, secret);
}

/**
 * `users` answers whether a session's user still exists: deleting a user ends their sessions. `personalTokens` finds
 * the owner of a personal access token (its row goes with its owner's).
 */
export function createAuthenticator(
  config: Config,
  users: Pick<UsersRepository, 'get'>,
  personalTokens: Pick<PersonalTokensRepository, 'findLive' | 'touch'>,
  oauthTokens?: Pick<McpOauthService, 'principalOf'>,
): Authenticator {
  const oidcConfigured = Boolean(config.OIDC_ISSUER_URL);
  const generatedToken =
    config.AUTH_ENABLED && !oidcConfigured && !config.SVC_API_TOKEN ? randomBytes(24).toString('base64url') : undefined;
  const apiToken = config.SVC_API_TOKEN ?? generatedToken;
  registerSecret(config.SVC_API_TOKEN);

  let secretText = config.SESSION_SECRET;
  if (secretText === INSECURE_SESSION_SECRET) {
    secretText = randomBytes(32).toString('base64url');
    if (config.AUTH_ENABLED) {
      log.warn(
        'SESSION_SECRET is the insecure placeholder: signing sessions with a random per-process secret; sessions will not survive a restart',
      );
    }
  }
  registerSecret(secretText);
  const secret = new TextEncoder().encode(secretText);

  async function bearer(req: Request, audience?: string): Promise<Principal> {
    const token = bearerToken(req);
    if (token === undefined) throw unauthorized();
    if (apiToken && sameSecret(token, apiToken)) return API_TOKEN_ADMIN;
    if (token.startsWith(PERSONAL_TOKEN_PREFIX)) return personalTokenPrincipal(token);
    if (token.startsWith(OAUTH_ACCESS_PREFIX)) return oauthPrincipal(token, audience);
    let payload: JWTPayload;
    try {
      // Every session this server issues has an expiry: a token without one is not ours, and would never end.
      ({ payload } = await jwtVerify(token, secret, {
        algorithms: ['HS256'],
        issuer: SESSION_ISSUER,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch {
      throw unauthorized('invalid or expired token');
    }
    const id = payload.sub;
    if (typeof id !== 'string' || !(await isSignedInUser(id))) throw unauthorized('invalid or expired token');
    return sessionPrincipal(id, payload);
  }

  /**
   * Whether a session's subject is a user who signs in. One primary-key look-up: a user who was deleted keeps no
   * access through a session still in hand. The built-in principals have rows too, but nobody signs in as them.
   */
  async function isSignedInUser(id: string): Promise<boolean> {
    return UUID.test(id) && !isBuiltInPrincipal(id) && Boolean(await users.get(id));
  }

  /**
   * The owner of a live personal access token, with her own roles: a signed-in user's token is her session's
   * principal; the API token administrator's is that administrator, but only while this server has an API token (a
   * server that signs people in with OIDC alone has no such administrator, and a token must not bring one back). Its
   * last use is written at most once a minute, not on every request.
   */
  async function personalTokenPrincipal(token: string): Promise<Principal> {
    const found = PERSONAL_TOKEN_PATTERN.test(token)
      ? await personalTokens.findLive(personalTokenDigest(token))
      : undefined;
    if (!found) throw unauthorized('invalid or expired token');
    let principal: Principal;
    if (found.user_id === API_TOKEN_ADMIN.id && apiToken) principal = API_TOKEN_ADMIN;
    else if (isBuiltInPrincipal(found.user_id)) throw unauthorized('invalid or expired token');
    else {
      principal = {
        id: found.user_id,
        kind: 'session',
        via: 'personal_token',
        name: found.name ?? found.email ?? found.user_id,
        email: found.email ?? undefined,
        instanceAdmin: false,
      };
    }
    if (found.stale) await personalTokens.touch(found.id);
    return principal;
  }

  /**
   * The person an MCP client's access token acts for, where it is presented to the resource it was issued for. Her
   * roles are not in it: every check reads them as they are now.
   */
  async function oauthPrincipal(token: string, audience: string | undefined): Promise<Principal> {
    const found = await oauthTokens?.principalOf(token);
    if (!found) throw unauthorized('invalid or expired token');
    if (found.resource !== audience) {
      throw unauthorized(`this token was issued for ${found.resource} and is not accepted here`);
    }
    return found.principal;
  }

  /** The signed-in user a verified session or stream token names. */
  function sessionPrincipal(id: string, payload: JWTPayload): Principal {
    return {
      id,
      kind: 'session',
      name: typeof payload.name === 'string' ? payload.name : id,
      email: typeof payload.email === 'string' ? payload.email : undefined,
      instanceAdmin: false,
    };
  }

  async function streamPrincipal(token: unknown, runId: string): Promise<Principal> {
    if (typeof token !== 'string') throw unauthorized('invalid or expired stream token');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, secret, {
        algorithms: ['HS256'],
        issuer: STREAM_ISSUER,
        audience: STREAM_AUDIENCE,
        requiredClaims: ['exp', 'sub', 'run'],
      }));
    } catch {
      throw unauthorized('invalid or expired stream token');
    }
    if (payload.run !== runId) throw unauthorized('this stream token is for another run');
    if (payload.kind === 'api_token' && payload.sub === API_TOKEN_ADMIN.id) return API_TOKEN_ADMIN;
    const id = payload.sub;
    if (payload.kind !== 'session' || typeof id !== 'string' || !(await isSignedInUser(id))) {
      throw unauthorized('invalid or expired stream token');
    }
    return sessionPrincipal(id, payload);
  }

  return {
    enabled: config.AUTH_ENABLED,
    generatedToken,
    async authenticate(req, options) {
      if (!config.AUTH_ENABLED) return ANONYMOUS_ADMIN;
      // The Authorization header decides when there is one: a client that sends its token both ways (a generated
      // client fills every scheme it knows) is its bearer, whatever the query holds, and never acts as the caller
      // a stream token in the query names. A stream token is for the request that has no header.
      const streamToken = options?.streamOf ? req.query.access_token : undefined;
      if (streamToken !== undefined && req.headers.authorization === undefined) {
        return streamPrincipal(streamToken, options!.streamOf!);
      }
      return bearer(req, options?.audience);
    },
    async issueStreamToken(principal, runId) {
      const expiresAt = new Date((Math.floor(Date.now() / 1000) + STREAM_TOKEN_TTL_S) * 1000);
      const token = await new SignJWT({
        run: runId,
        kind: principal.kind,
        name: principal.name,
        ...(principal.email ? { email: principal.email } : {}),
      })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(principal.id)
        .setIssuer(STREAM_ISSUER)
        .setAudience(STREAM_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
        .sign(secret);
      return { token, expiresAt };
    },
    derivedKey(purpose) {
      return new Uint8Array(hkdfSync('sha256', secret, new Uint8Array(0), `agent-workflow-service/${purpose}`, 32));
    },
    async sealLogin(pending) {
      return new SignJWT({ pending })
        .setProtectedHeader({ alg: 'HS256' })
        .setAudience('svc-login')
        .setExpirationTime('10m')
        .sign(secret);
    },
    async openLogin(sealed) {
      const { payload } = await jwtVerify(sealed, secret, { algorithms: ['HS256'], audience: 'svc-login' });
      return payload.pending as Record<string, string>;
    },
    async issueSession(user) {
      return new SignJWT({ name: user.name, ...(user.email ? { email: user.email } : {}) })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(user.id)
        .setIssuer(SESSION_ISSUER)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + config.SESSION_TTL_S)
        .sign(secret);
    },
  };
}
