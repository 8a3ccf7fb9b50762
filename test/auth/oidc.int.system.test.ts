import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInThroughProvider, type OidcProvider } from '../fixtures/oidc-provider';
import { launchChromium } from '../helpers/browser';
import { useIntegrationServer } from '../helpers/integration';
import { startOidcServer } from '../helpers/oidc-server';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';

const ctx = useIntegrationServer({ server: false });
let provider: OidcProvider;
let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  ({ provider, server } = await startOidcServer(ctx, { SESSION_SECRET: 'session-secret-for-the-oidc-test-0123' }));
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await provider?.close();
});

/** Signs in through the provider's forms in the browser: the session token and where the callback led. */
async function signIn(login: string, query = ''): Promise<{ token: string; landed: string }> {
  const landed = await signInThroughProvider(browser, server.url, login, query);
  const token = decodeURIComponent(/^\/ui#token=([^&]+)/.exec(landed)?.[1] ?? '');
  return { token, landed };
}

describe('OIDC sign-in through a real OpenID provider, in Chromium', () => {
  it('signs in through the provider form: session token in the fragment, /auth/me, an authenticated run; the first user is admin', async () => {
    const { token, landed } = await signIn('ada');
    // The session token travels in the URL fragment, never in the query string.
    expect(landed).toMatch(/^\/ui#token=[\w.-]+$/);
    const me = await (await server.request('/auth/me', { headers: { authorization: `Bearer ${token}` } })).json();
    expect(me).toMatchObject({
      user: { name: 'User ada', email: 'ada@example.com', kind: 'session' },
      instance_admin: false,
      oidc_enabled: true,
    });
    expect(me.memberships).toEqual([
      { scope_type: 'org', scope_id: expect.any(String), scope_name: 'Default organisation', role: 'admin' },
    ]);
    expect(
      server.logs.some((l) => /INFO svc\.auth user=\S+ is the first user of this installation: admin of/.test(l)),
    ).toBe(true);

    const run = await fetch(`${server.url}/graphs/summary/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'signed-in run' }),
    });
    const events = await readEvents(run);
    expect(events.at(-1)!.data.type).toBe('run_done');
    expect(server.logs.some((l) => l.includes('graph run start agent=summary') && l.includes('user=User ada'))).toBe(
      true,
    );
  });

  it("hands the studio tab's handoff back beside the token, so the tab knows the sign-in is its own", async () => {
    const handoff = 'a-studio-tab-value_0123456789abcdef';
    const { token, landed } = await signIn('carol', `?handoff=${handoff}`);
    expect(landed).toBe(`/ui#token=${token}&handoff=${handoff}`);
    const me = await server.request('/auth/me', { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
  });

  it('a later user belongs nowhere until someone adds them', async () => {
    const { token } = await signIn('bob');
    const me = await (await server.request('/auth/me', { headers: { authorization: `Bearer ${token}` } })).json();
    expect(me.memberships).toEqual([]);
    const threads = await (await server.request('/threads', { headers: { authorization: `Bearer ${token}` } })).json();
    expect(threads.items).toEqual([]);
    const run = await server.request('/graphs/summary/run', {
      method: 'POST',
      json: { message: 'x' },
      headers: { authorization: `Bearer ${token}` },
    });
    expect(run.status).toBe(404);
  });
});
