import * as client from 'openid-client';
import { isLoopbackHost } from '../config';
import { getLogger } from '../log';

const log = getLogger('svc.auth');

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  /** Read at each login: by default it is the address the server listens on, known only once it listens. */
  redirectUri: () => string;
}

export interface LoginStart {
  url: string;
  /** Kept by the browser (in a signed cookie) until the callback. */
  pending: { verifier: string; state: string; nonce: string };
}

export interface OidcIdentity {
  issuer: string;
  subject: string;
  name: string | null;
  email: string | null;
  /** The provider said the email is hers (`email_verified`): only then may another system's account match by it. */
  emailVerified: boolean;
}

/**
 * Authorization Code with PKCE, state and nonce, through openid-client. Discovery happens on first
 * use and is retried on the next login after a failure, so a provider that is down does not stop the
 * server from starting.
 */
export function createOidc(settings: OidcSettings) {
  let configuration: Promise<client.Configuration> | undefined;

  const discover = () => {
    configuration ??= (async () => {
      const issuer = new URL(settings.issuer);
      const insecure = issuer.protocol === 'http:' && isLoopbackHost(issuer.hostname);
      const config = await client.discovery(
        issuer,
        settings.clientId,
        settings.clientSecret,
        settings.clientSecret ? undefined : client.None(),
        insecure ? { execute: [client.allowInsecureRequests] } : undefined,
      );
      log.info(`OIDC provider discovered: ${config.serverMetadata().issuer}`);
      return config;
    })().catch((error) => {
      configuration = undefined;
      throw error;
    });
    return configuration;
  };

  return {
    async start(): Promise<LoginStart> {
      const config = await discover();
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: settings.redirectUri(),
        scope: 'openid profile email',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { url: url.href, pending: { verifier, state, nonce } };
    },

    async finish(callbackUrl: URL, pending: LoginStart['pending']): Promise<OidcIdentity> {
      const config = await discover();
      const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      let claims: Record<string, unknown> = tokens.claims()!;
      const subject = String(claims.sub);
      // Many providers keep profile and email out of the ID token: ask the userinfo endpoint then.
      if (typeof claims.name !== 'string' || typeof claims.email !== 'string') {
        claims = { ...(await client.fetchUserInfo(config, tokens.access_token, subject)), ...claims };
      }
      const text = (value: unknown) => (typeof value === 'string' && value ? value : null);
      return {
        issuer: String(claims.iss ?? config.serverMetadata().issuer),
        subject,
        name: text(claims.name) ?? text(claims.preferred_username),
        email: text(claims.email),
        emailVerified: claims.email_verified === true,
      };
    },
  };
}

export type Oidc = ReturnType<typeof createOidc>;
