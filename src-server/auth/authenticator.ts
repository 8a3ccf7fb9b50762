import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import type { Request } from 'express';
import { jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { INSECURE_SESSION_SECRET, type Config } from '../config';
import type { UsersRepository } from '../db/users.repository';
import { getLogger, registerSecret } from '../log';
import { unauthorized } from '../contracts/errors';
import { ANONYMOUS_ADMIN, API_TOKEN_ADMIN, type Principal } from './principal';

const log = getLogger('svc.auth');
export const SESSION_ISSUER = 'agent-workflow-service';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface Authenticator {
  readonly enabled: boolean;
  /** The token generated at start when auth is on and nothing else is configured; shown in the studio link. */
  readonly generatedToken?: string;
  authenticate(req: Request): Promise<Principal>;
  issueSession(user: { id: string; name: string; email?: string }): Promise<string>;
  /** Seals what a login must find again at its callback (PKCE verifier, state, nonce) for a cookie. */
  sealLogin(pending: Record<string, string>): Promise<string>;
  openLogin(sealed: string): Promise<Record<string, string>>;
}

/** Hashing first makes the comparison constant-time whatever the lengths. */
function sameSecret(a: string, b: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** `users` answers whether a session's user still exists: deleting a user ends their sessions. */
export function createAuthenticator(config: Config, users: Pick<UsersRepository, 'get'>): Authenticator {
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

  return {
    enabled: config.AUTH_ENABLED,
    generatedToken,
    async authenticate(req) {
      if (!config.AUTH_ENABLED) return ANONYMOUS_ADMIN;
      const header = req.headers.authorization ?? '';
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) throw unauthorized();
      const token = match[1]!;
      if (apiToken && sameSecret(token, apiToken)) return API_TOKEN_ADMIN;
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
      if (typeof id !== 'string' || !UUID.test(id)) throw unauthorized('invalid or expired token');
      // One primary-key look-up: a user who was deleted keeps no access through a session still in hand.
      if (!(await users.get(id))) throw unauthorized('invalid or expired token');
      return {
        id,
        kind: 'session',
        name: typeof payload.name === 'string' ? payload.name : id,
        email: typeof payload.email === 'string' ? payload.email : undefined,
        instanceAdmin: false,
      };
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
