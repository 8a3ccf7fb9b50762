import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, startOidcProvider, type OidcProvider } from '../fixtures/oidc-provider';
import { freePort } from '../helpers/ports';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { expect, screenshotPath, test } from './studio.fixtures';

/**
 * The studio's identity-provider button, end to end: a second server, configured for OIDC against a
 * real OpenID provider running in this process, on the browser tests' database.
 */
let provider: OidcProvider;
let server: ServerProcess;

test.beforeAll(async () => {
  const serverPort = await freePort();
  provider = await startOidcProvider(`http://127.0.0.1:${serverPort}/auth/callback`);
  server = await spawnServer({
    PORT: String(serverPort),
    DATABASE_URL: process.env.E2E_DATABASE_URL!,
    LOCAL_LLM_BASE: process.env.E2E_MODEL_URL!,
    DEFAULT_MODEL: 'fake-model',
    AUTH_ENABLED: 'true',
    OIDC_ISSUER_URL: provider.issuer,
    OIDC_CLIENT_ID,
    OIDC_CLIENT_SECRET,
    SESSION_SECRET: 'session-secret-for-the-e2e-sign-in-0123',
  });
});

test.afterAll(async () => {
  await server?.stop();
  await provider?.close();
});

test('signs in with the identity provider from the sign-in screen, then signs out', async ({ page }) => {
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.goto(`${server.url}/ui`);
  await expect(page.getByTestId('sign-in')).toBeVisible();
  await page.screenshot({ path: screenshotPath('10-sign-in') });
  await page.getByTestId('sign-in-oidc').click();

  await page.fill('input[name=login]', 'ada');
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  await page.waitForURL((url) => url.href.startsWith(server.url) || url.pathname.includes('interaction'));
  if (!page.url().startsWith(server.url)) await page.click('button[type=submit]');

  await expect(page.getByTestId('user-name')).toHaveText('User ada');
  expect(page.url()).not.toContain('token=');
  expect(await page.evaluate(() => localStorage.getItem('svc.token'))).toMatch(/^ey/);
  await expect(page.getByTestId('asset-change-review')).toBeVisible();

  await page.getByTestId('sign-out').click();
  await expect(page.getByTestId('sign-in')).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem('svc.token'))).toBeNull();
});
