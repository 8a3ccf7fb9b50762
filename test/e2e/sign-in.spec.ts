import { useOidcServer } from './oidc-server';
import { expect, screenshotPath, test, fromHeader } from './studio.fixtures';

/**
 * The studio's identity-provider button, end to end: a second server, configured for OIDC against a
 * real OpenID provider running in this process, on the browser tests' database.
 */
const server = useOidcServer({ SESSION_SECRET: 'session-secret-for-the-e2e-sign-in-0123' });

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

  await fromHeader(page, 'sign-out');
  await expect(page.getByTestId('sign-in')).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem('svc.token'))).toBeNull();
});
