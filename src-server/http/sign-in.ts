import type { Request, Response } from 'express';
import type { Authenticator } from '../auth/authenticator';
import type { Oidc } from '../auth/oidc';

/** The cookie that keeps a sign-in's PKCE verifier, state and nonce (sealed) from /auth/login to /auth/callback. */
export const LOGIN_COOKIE = 'svc_login';

/** The consent page of an MCP client's sign-in, and the cookie that tells it the browser whose sign-in it is. */
export const CONSENT_PATH = '/oauth/consent';
export const CONSENT_COOKIE = 'svc_oauth_consent';

export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** A redirect with no body: Express's res.redirect() adds a text or HTML one that the document does not declare. */
export function redirect(res: Response, location: string, status: 302 | 303 = 302): void {
  res.status(status).location(location).end();
}

/**
 * Sends the browser to the identity provider, keeping what the callback must find again in a sealed cookie: the
 * PKCE verifier, state and nonce, and `also` (the studio tab's handoff, or the MCP client's authorization request).
 * Throws when the provider cannot be reached.
 */
export async function beginSignIn(
  oidc: Oidc,
  auth: Authenticator,
  req: Request,
  res: Response,
  also: Record<string, string> = {},
): Promise<void> {
  const { url, pending } = await oidc.start();
  const sealed = await auth.sealLogin({ ...pending, ...also });
  res.cookie(LOGIN_COOKIE, sealed, {
    httpOnly: true,
    sameSite: 'lax',
    path: '/auth',
    maxAge: 600_000,
    // Over TLS (the request's own, or a trusted proxy's X-Forwarded-Proto) the cookie never travels in clear.
    secure: req.secure,
  });
  redirect(res, url);
}
