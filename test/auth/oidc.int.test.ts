import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, type OidcProvider } from '../fixtures/oidc-provider';
import { useIntegrationServer } from '../helpers/integration';
import { startOidcServer } from '../helpers/oidc-server';
import type { TestServer } from '../helpers/server';

const ctx = useIntegrationServer({ server: false });
let provider: OidcProvider;
let issuer: string;
let server: TestServer;

beforeAll(async () => {
  ({ provider, server } = await startOidcServer(ctx, { SESSION_SECRET: 'session-secret-for-the-oidc-test-0123' }));
  issuer = provider.issuer;
});
afterAll(async () => {
  await server?.close();
  await provider?.close();
});

/** The sign-in's server side; oidc.int.system.test.ts signs in through the provider's forms in Chromium. */
describe('OIDC login against a real OpenID provider', () => {
  it('redirects to the provider with PKCE, state, nonce and the scopes', async () => {
    const res = await fetch(`${server.url}/auth/login`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin).toBe(issuer);
    expect(location.searchParams.get('scope')).toBe('openid profile email');
    expect(location.searchParams.get('redirect_uri')).toBe(`${server.url}/auth/callback`);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('state')).toBeTruthy();
    expect(location.searchParams.get('nonce')).toBeTruthy();
    expect(res.headers.get('set-cookie')).toMatch(/svc_login=.*HttpOnly/i);
  });

  it('sends the provider back to the port the server really listens on when PORT is 0', async () => {
    const anyPort = await ctx.start({
      PORT: '0',
      AUTH_ENABLED: 'true',
      OIDC_ISSUER_URL: issuer,
      OIDC_CLIENT_ID,
      OIDC_CLIENT_SECRET,
      SESSION_SECRET: 'session-secret-for-the-oidc-test-0123',
    });
    try {
      expect(anyPort.port).toBeGreaterThan(0);
      const res = await fetch(`${anyPort.url}/auth/login`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      const location = new URL(res.headers.get('location')!);
      expect(location.searchParams.get('redirect_uri')).toBe(`http://127.0.0.1:${anyPort.port}/auth/callback`);
    } finally {
      await anyPort.close();
    }
  });

  it('marks the login cookie Secure when the request came over TLS, as a trusted proxy says', async () => {
    const cookieOf = async (target: TestServer, headers: Record<string, string> = {}) =>
      (await fetch(`${target.url}/auth/login`, { redirect: 'manual', headers })).headers.get('set-cookie') ?? '';
    expect(await cookieOf(server, { 'x-forwarded-proto': 'https' })).toMatch(/svc_login=.*;\s*Secure/i);
    expect(await cookieOf(server)).not.toMatch(/;\s*Secure/i);
    // A proxy that TRUST_PROXY does not name is not believed: this client (loopback) is not a trusted proxy.
    const strict = await ctx.start({
      AUTH_ENABLED: 'true',
      OIDC_ISSUER_URL: issuer,
      OIDC_CLIENT_ID,
      OIDC_CLIENT_SECRET,
      TRUST_PROXY: '10.0.0.0/8',
    });
    try {
      const cookie = await cookieOf(strict, { 'x-forwarded-proto': 'https' });
      expect(cookie).toMatch(/svc_login=/);
      expect(cookie).not.toMatch(/;\s*Secure/i);
    } finally {
      await strict.close();
    }
  });

  it("refuses a studio tab's handoff that is not of the studio's own form: it never reaches the cookie", async () => {
    for (const malformed of [
      'short',
      'has spaces in it, and more of them',
      'x'.repeat(129),
      'a"><script>-0123456789',
    ]) {
      const res = await fetch(`${server.url}/auth/login?handoff=${encodeURIComponent(malformed)}`, {
        redirect: 'manual',
      });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('handoff'),
      });
      expect(res.headers.get('set-cookie')).toBeNull();
    }
  });

  it('answers a forged or replayed callback and a provider error with a clear page, not a 500', async () => {
    const forged = await fetch(`${server.url}/auth/callback?code=forged&state=forged`, {
      headers: { accept: 'text/html' },
    });
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain('This sign-in link has expired or was already used');

    const login = await fetch(`${server.url}/auth/login`, { redirect: 'manual' });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const tampered = await fetch(`${server.url}/auth/callback?code=abc&state=wrong`, {
      headers: { accept: 'text/html', cookie },
    });
    expect(tampered.status).toBe(400);
    expect(await tampered.text()).toContain('could not be verified');

    const refused = await fetch(`${server.url}/auth/callback?error=access_denied&error_description=user+cancelled`, {
      headers: { accept: 'text/html' },
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain(
      'The identity provider refused the sign-in (access_denied: user cancelled).',
    );
  });
});
