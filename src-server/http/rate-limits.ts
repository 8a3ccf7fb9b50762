import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { bearerToken } from '../auth/authenticator';
import { errorBody } from '../contracts/errors';

/** The doors that take no token, each limited per client address: sign-in, Slack's clicks, mail's decision links. */
export const ADDRESS_LIMITED_PATHS = ['/auth/login', '/auth/callback', '/integrations/slack/', '/stop-links/'];

const WINDOW_MS = 60_000;
/** The limits with authentication on when the configuration names none; with it off there are none. */
const DEFAULT_PER_TOKEN = 1200;
const DEFAULT_PER_ADDRESS = 120;

/** The limits a server applies: RATE_LIMIT_PER_MINUTE and RATE_LIMIT_ADDRESS_PER_MINUTE, else the defaults. */
export function limitsOf(config: {
  AUTH_ENABLED: boolean;
  RATE_LIMIT_PER_MINUTE?: number;
  RATE_LIMIT_ADDRESS_PER_MINUTE?: number;
}): { perToken: number; perAddress: number } {
  return {
    perToken: config.RATE_LIMIT_PER_MINUTE ?? (config.AUTH_ENABLED ? DEFAULT_PER_TOKEN : 0),
    perAddress: config.RATE_LIMIT_ADDRESS_PER_MINUTE ?? (config.AUTH_ENABLED ? DEFAULT_PER_ADDRESS : 0),
  };
}

/** The token a request carries however it carries it (a header, LangGraph's X-Api-Key, a stream's ?access_token=). */
function tokenOf(req: Request): string | undefined {
  const query = req.query.access_token;
  return bearerToken(req) ?? req.get('x-api-key') ?? (typeof query === 'string' ? query : undefined);
}

/** A token's key in the limiter's memory: its hash, never the token itself. */
const keyOf = (token: string) => createHash('sha256').update(token).digest('base64url').slice(0, 32);

/** The error envelope with Retry-After: the seconds until the caller's window lets the next request through. */
function refuse(req: Request, res: Response, what: string): void {
  const resetAt = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
  const retryAfterS = Math.max(1, Math.ceil(((resetAt?.getTime() ?? Date.now() + WINDOW_MS) - Date.now()) / 1000));
  res
    .status(429)
    .set('Retry-After', String(retryAfterS))
    .json(errorBody('too_many_requests', `${what}: try again in ${retryAfterS} s`));
}

/**
 * Request limits (docs/operations.md#rate-limits), counted in this process's memory in fixed one-minute windows
 * (express-rate-limit's memory store): with several processes behind a load balancer a caller may make up to the limit
 * on each. Per token on everything that takes one (the API, /lg, /mcp); per client address (as TRUST_PROXY reads it)
 * on the doors without one. A limit of 0 is none, and then no middleware is installed at all.
 */
export function rateLimits(limits: { perToken: number; perAddress: number }): RequestHandler[] {
  const handlers: RequestHandler[] = [];
  if (limits.perAddress > 0) {
    handlers.push(
      rateLimit({
        windowMs: WINDOW_MS,
        limit: limits.perAddress,
        standardHeaders: false,
        legacyHeaders: false,
        // TRUST_PROXY is checked at start; the library's own checks would print to the console.
        validate: false,
        skip: (req) => !ADDRESS_LIMITED_PATHS.some((path) => req.path.startsWith(path)),
        keyGenerator: (req) => `address:${req.ip ?? 'unknown'}`,
        handler: (req, res) =>
          refuse(req, res, `more than ${limits.perAddress} requests a minute to this door from your address`),
      }),
    );
  }
  if (limits.perToken > 0) {
    handlers.push(
      rateLimit({
        windowMs: WINDOW_MS,
        limit: limits.perToken,
        standardHeaders: false,
        legacyHeaders: false,
        validate: false,
        skip: (req) => tokenOf(req) === undefined,
        keyGenerator: (req) => `token:${keyOf(tokenOf(req)!)}`,
        handler: (req, res) => refuse(req, res, `more than ${limits.perToken} requests a minute with this token`),
      }),
    );
  }
  return handlers;
}
