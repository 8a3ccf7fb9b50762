import type { Request, Response } from 'express';
import { LoginQuerySchema, MeSchema, type Me } from '../contracts/auth';
import type { Oidc } from '../auth/oidc';
import { getLogger } from '../log';
import type { UsersService } from '../services/users.service';
import type { Api } from './api';
import { errorBody } from '../contracts/errors';
import type { AppDeps } from './deps';
import { inlineHash, pagePolicy } from './security-headers';
import { errorMessage } from '../contracts/errors';
import { OAUTH_REQUEST_TTL_S } from '../contracts/oauth';
import { beginSignIn, CONSENT_COOKIE, CONSENT_PATH, LOGIN_COOKIE, readCookie, redirect } from './sign-in';

const log = getLogger('svc.auth');

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The failure page's one inline stylesheet, which its content policy allows by hash. */
const FAILURE_STYLE = 'body{font-family:system-ui;max-width:640px;margin:60px auto}';
const failurePagePolicy = pagePolicy({ defaultSrc: ["'none'"], styleSrc: [inlineHash(FAILURE_STYLE)] });

/**
 * Provider errors and forged or replayed callbacks end here, not in a 500: a page that says what
 * happened for a browser, the error envelope for any other client.
 */
function loginFailed(req: Request, res: Response, message: string, status = 400): void {
  if (req.accepts(['application/json', 'text/html']) !== 'text/html') {
    res.status(status).json(errorBody('login_failed', message));
    return;
  }
  failurePagePolicy(req, res, () => undefined);
  res
    .status(status)
    .type('html')
    .send(
      `<!doctype html><html lang="en"><meta charset="utf-8"><title>Sign-in failed</title><style>${FAILURE_STYLE}</style><body>` +
        `<h1>Sign-in failed</h1><p>${escape(message)}</p><p><a href="/auth/login">Try again</a> · <a href="/ui">Back to the studio</a></p></body></html>`,
    );
}

export interface AuthRouteDeps {
  oidc?: Oidc;
  users: UsersService;
}

export function authRoutes(api: Api, { auth, config, mcpOauth }: AppDeps, { oidc, users }: AuthRouteDeps): void {
  /** Where an MCP client waiting for a sign-in that failed hears it (its redirect_uri with `error`), if one waits. */
  async function clientRefusal(sealed: string | undefined, why: string): Promise<string | undefined> {
    if (!sealed || !mcpOauth) return undefined;
    const pending = await auth.openLogin(sealed).catch(() => undefined);
    if (!pending?.oauth_request) return undefined;
    return mcpOauth.service.refuse(pending.oauth_request, 'access_denied', why, mcpOauth.issuer());
  }

  /** The person signed in for an MCP client: on to the consent page, in the browser that holds its cookie. */
  async function consentNext(req: Request, res: Response, requestId: string, userId: string): Promise<void> {
    const cookie = await mcpOauth!.service.signedIn(requestId, userId);
    if (!cookie) {
      return loginFailed(req, res, "The MCP client's sign-in request has expired. Start again from the client.");
    }
    res.cookie(CONSENT_COOKIE, cookie, {
      httpOnly: true,
      sameSite: 'lax',
      path: CONSENT_PATH,
      maxAge: OAUTH_REQUEST_TTL_S * 1000,
      secure: req.secure,
    });
    redirect(res, `${CONSENT_PATH}?request=${encodeURIComponent(requestId)}`);
  }

  api.route({
    method: 'get',
    path: '/auth/login',
    operationId: 'startLogin',
    tag: 'auth',
    summary: 'Redirect to the identity provider (Authorization Code with PKCE)',
    public: true,
    pageErrors: true,
    query: LoginQuerySchema,
    errors: {
      400: 'the identity provider cannot be reached (login_failed), or `handoff` is malformed (invalid_request)',
      404: 'OIDC is not configured on this server (login_failed)',
    },
    responses: {
      302: {
        description: "to the identity provider's authorization endpoint; no body",
        headers: { Location: { description: "the provider's authorization URL", schema: { type: 'string' } } },
      },
    },
    handler: async ({ query, req, res }) => {
      if (!oidc) {
        loginFailed(
          req,
          res,
          'Sign-in with an identity provider is not configured on this server (OIDC_ISSUER_URL).',
          404,
        );
        return;
      }
      try {
        await beginSignIn(oidc, auth, req, res, query.handoff ? { handoff: query.handoff } : {});
      } catch (error) {
        log.warn(`OIDC login could not start: ${errorMessage(error)}`);
        loginFailed(
          req,
          res,
          'The identity provider cannot be reached right now. Try again in a moment, or use an API token.',
        );
      }
    },
  });

  api.route({
    method: 'get',
    path: '/auth/callback',
    operationId: 'finishLogin',
    tag: 'auth',
    summary: 'Identity-provider callback: issues a session token and leads to the studio (token in the URL fragment)',
    public: true,
    pageErrors: true,
    errors: {
      400: 'the provider refused the sign-in, or its answer could not be verified, or the sign-in link expired (login_failed)',
    },
    responses: {
      302: {
        description:
          'to the studio with the session token in the URL fragment, and `&handoff=…` when the sign-in began with one; ' +
          "for an MCP client's sign-in, to the consent page (or, refused, to the client's redirect_uri with `error`); " +
          'no body',
        headers: {
          Location: {
            description: '/ui#token=<session token>, or /oauth/consent?request=<id>',
            schema: { type: 'string', examples: ['/ui#token=…'] },
          },
        },
      },
    },
    handler: async ({ req, res }) => {
      res.clearCookie(LOGIN_COOKIE, { path: '/auth', secure: req.secure });
      const error = typeof req.query.error === 'string' ? req.query.error : undefined;
      const sealed = readCookie(req, LOGIN_COOKIE);
      if (error) {
        const description = typeof req.query.error_description === 'string' ? `: ${req.query.error_description}` : '';
        // An MCP client waits for this sign-in: it hears the refusal at its own redirect address.
        const back = await clientRefusal(sealed, `the identity provider refused the sign-in (${error})`);
        if (back) return redirect(res, back);
        loginFailed(req, res, `The identity provider refused the sign-in (${error}${description}).`);
        return;
      }
      if (!oidc || !sealed) {
        loginFailed(req, res, 'This sign-in link has expired or was already used. Start again from the studio.');
        return;
      }
      try {
        const pending = await auth.openLogin(sealed);
        const callbackUrl = new URL(
          req.originalUrl,
          config.OIDC_REDIRECT_URI ?? `${req.protocol}://${req.get('host')}`,
        );
        const identity = await oidc.finish(callbackUrl, pending as { verifier: string; state: string; nonce: string });
        const user = await users.upsertFromLogin(
          identity.issuer,
          identity.subject,
          identity.name,
          identity.email,
          identity.emailVerified,
        );
        if (user.firstUser) {
          log.info(`user=${user.id} is the first user of this installation: admin of the default organisation`);
        }
        log.info(`signed in user=${user.id}`);
        if (pending.oauth_request && mcpOauth) {
          return await consentNext(req, res, pending.oauth_request, user.id);
        }
        const token = await auth.issueSession({
          id: user.id,
          name: user.name ?? user.email ?? identity.subject,
          email: user.email ?? undefined,
        });
        // The handoff goes back only to the browser that holds the login cookie: it is what tells the studio tab that
        // began this sign-in that the token is its own (see contracts/auth.ts).
        const handoff = pending.handoff ? `&handoff=${encodeURIComponent(pending.handoff)}` : '';
        redirect(res, `/ui#token=${encodeURIComponent(token)}${handoff}`);
      } catch (e) {
        log.warn(`OIDC callback refused: ${errorMessage(e)}`);
        loginFailed(
          req,
          res,
          'The sign-in response could not be verified (it may be forged, replayed or expired). Start again from the studio.',
        );
      }
    },
  });

  api.route({
    method: 'get',
    path: '/auth/me',
    operationId: 'getMe',
    tag: 'auth',
    summary: 'The signed-in user, their memberships and roles',
    responses: { 200: { description: 'current user', schema: MeSchema } },
    handler: async ({ ctx }): Promise<Me> => {
      const p = ctx.principal;
      const stored = p.kind === 'session' ? await users.get(p.id) : undefined;
      return {
        user: { id: p.id, name: stored?.name ?? p.name, email: stored?.email ?? p.email ?? null, kind: p.kind },
        instance_admin: p.instanceAdmin,
        // The built-in principals hold roles too when someone gave them one; the visitor never reaches this route.
        memberships: (await users.memberships(p.id)) as Me['memberships'],
        oidc_enabled: Boolean(oidc),
      };
    },
  });
}
