import type { Browser, Page } from '@playwright/test';
import { openProviderLogin } from '../fixtures/oidc-provider';
import { useOidcServer } from './oidc-server';
import { expect, screenshotPath, test } from './studio.fixtures';

/**
 * A studio link (`/ui#token=…`) that would sign in as someone else asks first. Two identities on one
 * server: the API token (an instance administrator) and a session token for "mallory", issued by the
 * server after a sign-in at a real OpenID provider; mallory stands for someone who sends a link with
 * their own token in it.
 */
const API_TOKEN = 'api-token-for-the-link-test-0123456789';
const server = useOidcServer({
  SVC_API_TOKEN: API_TOKEN,
  SESSION_SECRET: 'session-secret-for-the-e2e-link-test-0123',
});

/** Signs in at the provider in a browser of its own and returns the session token the callback hands out. */
async function sessionTokenFor(browser: Browser, login: string): Promise<string> {
  const { context, page, landed } = await openProviderLogin(browser, server.url);
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  // The provider asks for consent once per client: the page that follows is either that or the studio.
  const consent = page.getByRole('button', { name: 'Continue' });
  await expect.poll(async () => landed() !== '' || (await consent.isVisible())).toBe(true);
  if (!landed()) await consent.click();
  await expect.poll(() => landed()).not.toBe('');
  await context.close();
  return decodeURIComponent(/^\/ui#token=(.+)$/.exec(landed())![1]!);
}

/** How two tests begin: mallory's session token in hand, and `page` on the studio as the API token's administrator. */
async function malloryTokenAndAdminStudio(browser: Browser, page: Page): Promise<string> {
  const mallory = await sessionTokenFor(browser, 'mallory');
  await page.goto(`${server.url}/ui#token=${API_TOKEN}`);
  return mallory;
}

/** What the address bar holds after `#`: a token there would stay in history and travel on when copied. */
const fragmentOf = (page: Page) => new URL(page.url()).hash;
const storedToken = (page: Page) => page.evaluate(() => localStorage.getItem('svc.token'));
const dialog = (page: Page) => page.getByTestId('link-sign-in');

/** Opens a link the way a user does from a mail or a chat: a new tab of the same browser. */
async function openLink(page: Page, token: string): Promise<Page> {
  const tab = await page.context().newPage();
  await tab.goto(`${server.url}/ui#token=${encodeURIComponent(token)}`);
  return tab;
}

test('a link with another identity asks first, showing both; Cancel keeps the first, Switch changes it', async ({
  page,
  browser,
}) => {
  const mallory = await malloryTokenAndAdminStudio(browser, page);
  await expect(page.getByTestId('user-name')).toHaveText('api-token');
  await expect(dialog(page)).toHaveCount(0);

  const tab = await openLink(page, mallory);
  await expect(dialog(tab)).toBeVisible();
  await expect(tab.getByTestId('link-sign-in-current')).toHaveText('api-token (API token, instance administrator)');
  await expect(tab.getByTestId('link-sign-in-next')).toHaveText('User mallory (mallory@example.com)');
  // Nothing is loaded as either identity while the question is open, and the token is off the address bar.
  await expect(tab.getByTestId('user-name')).toHaveCount(0);
  expect(fragmentOf(tab)).toBe('');
  await tab.screenshot({ path: screenshotPath('12-link-sign-in') });

  await tab.getByTestId('link-sign-in-cancel').click();
  await expect(dialog(tab)).toHaveCount(0);
  await expect(tab.getByTestId('user-name')).toHaveText('api-token');
  await expect(tab.getByTestId('asset-change-review')).toBeVisible();
  expect(await storedToken(tab)).toBe(API_TOKEN);
  await tab.close();

  const again = await openLink(page, mallory);
  await again.getByTestId('link-sign-in-switch').click();
  await expect(again.getByTestId('user-name')).toHaveText('User mallory');
  expect(await storedToken(again)).toBe(mallory);
  expect(fragmentOf(again)).toBe('');
  await again.close();
});

test('the same identity, a stale stored token or no stored token: the link signs in without asking', async ({
  page,
  browser,
}) => {
  const first = await sessionTokenFor(browser, 'mallory');
  await page.goto(`${server.url}/ui#token=${encodeURIComponent(first)}`);
  await expect(page.getByTestId('user-name')).toHaveText('User mallory');

  // A refreshed token of the same user (issued a second later, so another token).
  await page.waitForTimeout(1100);
  const refreshed = await sessionTokenFor(browser, 'mallory');
  expect(refreshed).not.toBe(first);
  const tab = await openLink(page, refreshed);
  await expect(tab.getByTestId('user-name')).toHaveText('User mallory');
  await expect(dialog(tab)).toHaveCount(0);
  expect(await storedToken(tab)).toBe(refreshed);
  expect(fragmentOf(tab)).toBe('');

  // A stored token the server no longer accepts (a per-launch token from an earlier start) signs no one in.
  await tab.evaluate(() => localStorage.setItem('svc.token', 'a-per-launch-token-from-yesterday'));
  const stale = await openLink(page, API_TOKEN);
  await expect(stale.getByTestId('user-name')).toHaveText('api-token');
  await expect(dialog(stale)).toHaveCount(0);
  expect(await storedToken(stale)).toBe(API_TOKEN);
});

test('a link opened in the running studio asks too; a link whose token is refused changes nothing', async ({
  page,
  browser,
}) => {
  const mallory = await malloryTokenAndAdminStudio(browser, page);
  await expect(page.getByTestId('asset-change-review')).toBeVisible();

  // The same tab: only the fragment changes, so the page is not loaded again.
  await page.evaluate((token) => (location.hash = `token=${encodeURIComponent(token)}`), mallory);
  await expect(page.getByTestId('link-sign-in-next')).toHaveText('User mallory (mallory@example.com)');
  expect(fragmentOf(page)).toBe('');
  await page.getByTestId('link-sign-in-switch').click();
  await expect(page.getByTestId('user-name')).toHaveText('User mallory');
  expect(await storedToken(page)).toBe(mallory);

  await page.evaluate(() => (location.hash = 'token=forged-or-expired-token'));
  await expect(dialog(page)).toContainText("The link's sign-in is not valid");
  await expect(page.getByTestId('link-sign-in-current')).toHaveText('User mallory (mallory@example.com)');
  await page.getByTestId('link-sign-in-ok').click();
  await expect(dialog(page)).toHaveCount(0);
  await expect(page.getByTestId('user-name')).toHaveText('User mallory');
  expect(await storedToken(page)).toBe(mallory);
  expect(fragmentOf(page)).toBe('');
});
