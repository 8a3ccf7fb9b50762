import { decodeJwt } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInThroughProvider, type OidcProvider } from '../fixtures/oidc-provider';
import { launchChromium } from '../helpers/browser';
import { useIntegrationServer } from '../helpers/integration';
import { startOidcServer } from '../helpers/oidc-server';
import type { TestServer } from '../helpers/server';

/** The shortest session the configuration accepts (SESSION_TTL_S is an integer ≥ 60). */
const TTL_S = 60;

const ctx = useIntegrationServer({ server: false, model: false, catalog: false });
let provider: OidcProvider;
let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  ({ provider, server } = await startOidcServer(ctx, {
    SESSION_SECRET: 'session-secret-for-the-session-expiry-test',
    SESSION_TTL_S: String(TTL_S),
  }));
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await provider?.close();
});

const sleepUntil = (epochMs: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now())));

describe('a session token', () => {
  it(
    'issued at an OIDC sign-in works until SESSION_TTL_S seconds have passed, then answers 401 with the error envelope',
    async () => {
      const signInStarted = Math.floor(Date.now() / 1000);
      const landed = await signInThroughProvider(browser, server.url, 'ada');
      const signedIn = Math.ceil(Date.now() / 1000);
      const token = decodeURIComponent(/^\/ui#token=([^&]+)/.exec(landed)?.[1] ?? '');
      const { exp } = decodeJwt(token);
      expect(exp).toBeGreaterThanOrEqual(signInStarted + TTL_S);
      expect(exp).toBeLessThanOrEqual(signedIn + TTL_S);

      const asAda = (path: string) => server.request(path, { headers: { authorization: `Bearer ${token}` } });
      const fresh = await asAda('/auth/me');
      expect(fresh.status).toBe(200);
      expect(await fresh.json()).toMatchObject({ user: { name: 'User ada', kind: 'session' } });

      // A few seconds before its expiry it still works: the lifetime is the one configured, not a shorter one.
      await sleepUntil((exp! - 5) * 1000);
      expect((await asAda('/auth/me')).status).toBe(200);
      expect((await asAda('/threads')).status).toBe(200);

      await sleepUntil((exp! + 1) * 1000);
      for (const path of ['/auth/me', '/threads']) {
        const expired = await asAda(path);
        expect(expired.status, path).toBe(401);
        expect(await expired.json()).toEqual({ error: { code: 'unauthorized', message: 'invalid or expired token' } });
      }
    },
    (TTL_S + 60) * 1000,
  );
});
