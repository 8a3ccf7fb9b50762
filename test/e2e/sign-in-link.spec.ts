import type { Browser, BrowserContext, Page } from '@playwright/test';
import { openProviderLogin } from '../fixtures/oidc-provider';
import { useOidcServer } from './oidc-server';
import { expect, screenshotPath, signInByLink, test } from './studio.fixtures';

/**
 * A studio link (`/ui#token=…`) is taken without a question only when the studio asked for its token itself: the
 * end of the sign-in this tab started, or the desktop app's window on its own per-launch token. Any other link asks
 * first, whatever is stored: nothing, a token that no longer works, or another one. Two identities on one server:
 * the API token (an instance administrator) and a session token for "mallory", issued by the server after a sign-in
 * at a real OpenID provider; mallory stands for someone who sends a link with their own token in it.
 */
const API_TOKEN = 'api-token-for-the-link-test-0123456789';
const server = useOidcServer({
  SVC_API_TOKEN: API_TOKEN,
  SESSION_SECRET: 'session-secret-for-the-e2e-link-test-0123',
});
test.use({ viewport: { width: 1600, height: 1000 } });
const ADMIN = 'the API token (instance administrator)';
const MALLORY = 'User mallory (mallory@example.com)';

/** Goes through the provider's forms on `page`, from its login page up to where it hands back to the server. */
async function passProvider(page: Page, login: string, landed: () => boolean): Promise<void> {
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  // The provider asks for consent once per client: the page that follows is either that or the studio.
  const consent = page.getByRole('button', { name: 'Continue' });
  await expect.poll(async () => landed() || (await consent.isVisible())).toBe(true);
  if (!landed()) await consent.click();
}

/**
 * Signs in at the provider in a browser of its own and returns the session token the callback hands out, and the
 * whole link it leads to (`/ui#token=…`): what someone who signed in elsewhere could send.
 */
async function sessionLinkFor(browser: Browser, login: string): Promise<{ token: string; link: string }> {
  const { context, page, landed } = await openProviderLogin(browser, server.url);
  await passProvider(page, login, () => landed() !== '');
  await expect.poll(() => landed()).not.toBe('');
  await context.close();
  return { token: decodeURIComponent(/^\/ui#token=([^&]+)$/.exec(landed())![1]!), link: `${server.url}${landed()}` };
}

/** What the address bar holds after `#`: a token there would stay in history and travel on when copied. */
const fragmentOf = (page: Page) => new URL(page.url()).hash;
const storedToken = (page: Page) => page.evaluate(() => localStorage.getItem('svc.token'));
const dialog = (page: Page) => page.getByTestId('link-sign-in');
const linkTo = (token: string) => `${server.url}/ui#token=${encodeURIComponent(token)}`;

/** Opens a link the way a user does from a mail or a chat: a new tab of the same browser. */
async function openLink(context: BrowserContext, url: string): Promise<Page> {
  const tab = await context.newPage();
  await tab.goto(url);
  return tab;
}

/** The question a link asks, who it names on each side, and that nothing of either identity is shown meanwhile. */
async function expectQuestion(page: Page, title: string, current: string, next: string): Promise<void> {
  await expect(dialog(page)).toBeVisible();
  await expect(dialog(page).getByRole('heading')).toHaveText(title);
  await expect(page.getByTestId('link-sign-in-current')).toHaveText(current);
  await expect(page.getByTestId('link-sign-in-next')).toHaveText(next);
  await expect(page.getByTestId('user-name')).toHaveCount(0);
  await expect(page.getByTestId('sign-in')).toHaveCount(0);
  expect(fragmentOf(page)).toBe('');
}

test('with no token stored a link asks before it signs in; Cancel leaves the studio signed out', async ({ page }) => {
  await page.goto(linkTo(API_TOKEN));
  await expectQuestion(page, 'Sign in with this link?', 'nobody', ADMIN);
  await expect(page.getByTestId('link-sign-in-switch')).toHaveText('Sign in');
  await page.screenshot({ path: screenshotPath('12-link-sign-in') });

  await page.getByTestId('link-sign-in-cancel').click();
  await expect(page.getByTestId('sign-in')).toBeVisible();
  expect(await storedToken(page)).toBeNull();

  const again = await openLink(page.context(), linkTo(API_TOKEN));
  await expectQuestion(again, 'Sign in with this link?', 'nobody', ADMIN);
  await again.getByTestId('link-sign-in-switch').click();
  await expect(again.getByTestId('user-name')).toHaveText('the API token');
  expect(await storedToken(again)).toBe(API_TOKEN);
  expect(fragmentOf(again)).toBe('');
});

test('with an expired token stored a link asks too, and so does a refreshed token of the same person', async ({
  page,
  browser,
}) => {
  // A stored token the server no longer accepts (a per-launch token from an earlier start) signs no one in.
  await page.goto(`${server.url}/ui`);
  await page.evaluate(() => localStorage.setItem('svc.token', 'a-per-launch-token-from-yesterday'));
  const stale = await openLink(page.context(), linkTo(API_TOKEN));
  await expectQuestion(stale, 'Sign in with this link?', 'nobody (the stored sign-in is no longer valid)', ADMIN);
  await stale.getByTestId('link-sign-in-cancel').click();
  await expect(stale.getByTestId('sign-in')).toBeVisible();
  expect(await storedToken(stale)).toBe('a-per-launch-token-from-yesterday');

  const first = await sessionLinkFor(browser, 'mallory');
  await signInByLink(stale, first.link, stale.getByTestId('user-name'));
  await expect(stale.getByTestId('user-name')).toHaveText('User mallory');

  // A token of the same user issued a second later: another token, so another link, which asks as well.
  await page.waitForTimeout(1100);
  const refreshed = await sessionLinkFor(browser, 'mallory');
  expect(refreshed.token).not.toBe(first.token);
  const tab = await openLink(page.context(), refreshed.link);
  await expectQuestion(tab, 'Switch to another identity?', MALLORY, MALLORY);
  await tab.getByTestId('link-sign-in-switch').click();
  await expect(tab.getByTestId('user-name')).toHaveText('User mallory');
  expect(await storedToken(tab)).toBe(refreshed.token);
});

test('a link with another identity asks first, showing both; Cancel keeps the first, Switch changes it', async ({
  page,
  browser,
}) => {
  const mallory = await sessionLinkFor(browser, 'mallory');
  await signInByLink(page, linkTo(API_TOKEN), page.getByTestId('user-name'));
  await expect(page.getByTestId('user-name')).toHaveText('the API token');

  const tab = await openLink(page.context(), mallory.link);
  await expectQuestion(tab, 'Switch to another identity?', ADMIN, MALLORY);
  await tab.getByTestId('link-sign-in-cancel').click();
  await expect(dialog(tab)).toHaveCount(0);
  await expect(tab.getByTestId('user-name')).toHaveText('the API token');
  await expect(tab.getByTestId('asset-change-review')).toBeVisible();
  expect(await storedToken(tab)).toBe(API_TOKEN);
  await tab.close();

  const again = await openLink(page.context(), mallory.link);
  await again.getByTestId('link-sign-in-switch').click();
  await expect(again.getByTestId('user-name')).toHaveText('User mallory');
  expect(await storedToken(again)).toBe(mallory.token);
  expect(fragmentOf(again)).toBe('');
});

test("the end of this tab's own sign-in is taken without asking; a link that only claims to be one asks", async ({
  page,
  browser,
}) => {
  const eve = await sessionLinkFor(browser, 'eve');
  const EXPIRED = 'nobody (the stored sign-in is no longer valid)';
  // An expired token stored: the studio shows the sign-in screen, and the person starts a sign-in from there.
  await page.goto(`${server.url}/ui`);
  await page.evaluate(() => localStorage.setItem('svc.token', 'a-per-launch-token-from-yesterday'));
  await page.reload();
  await page.getByTestId('sign-in-oidc').click();
  await expect(page.locator('input[name=login]')).toBeVisible();

  // Before it ends, this very tab is sent a link that claims to end it, with a handoff the tab never sent: it asks.
  await page.goto(`${linkTo(eve.token)}&handoff=a-value-this-tab-never-sent-0123`);
  await expectQuestion(page, 'Sign in with this link?', EXPIRED, 'User eve (eve@example.com)');
  await page.getByTestId('link-sign-in-cancel').click();
  await expect(page.getByTestId('sign-in')).toBeVisible();
  expect(await storedToken(page)).toBe('a-per-launch-token-from-yesterday');

  await page.getByTestId('sign-in-oidc').click();
  await passProvider(page, 'mallory', () => page.url().startsWith(server.url));
  await expect(page.getByTestId('user-name')).toHaveText('User mallory');
  await expect(dialog(page)).toHaveCount(0);
  expect(fragmentOf(page)).toBe('');
  expect(await storedToken(page)).toMatch(/^ey/);
});

test("the desktop app's window takes its own per-launch token without asking, and asks about any other", async ({
  browser,
}) => {
  /** A browser as the desktop window is: its preload's window.desktop, whose app says which token it started with. */
  const desktopWindow = async (launchToken: string) => {
    const context = await browser.newContext();
    await context.addInitScript((apiToken) => {
      const appInfo = async () => ({ version: 'test', apiUrl: location.origin, apiToken, serverError: null });
      Object.defineProperty(window, 'desktop', { value: { appInfo } });
    }, launchToken);
    return context.newPage();
  };

  const own = await desktopWindow(API_TOKEN);
  await own.goto(linkTo(API_TOKEN));
  await expect(own.getByTestId('user-name')).toHaveText('the API token');
  await expect(dialog(own)).toHaveCount(0);
  expect(await storedToken(own)).toBe(API_TOKEN);
  expect(fragmentOf(own)).toBe('');

  const other = await desktopWindow('the-token-this-launch-really-has-0123');
  await other.goto(linkTo(API_TOKEN));
  await expectQuestion(other, 'Sign in with this link?', 'nobody', ADMIN);
  await own.context().close();
  await other.context().close();
});

test('a link opened in the running studio asks too; a link whose token is refused changes nothing', async ({
  page,
  browser,
}) => {
  const mallory = await sessionLinkFor(browser, 'mallory');
  await signInByLink(page, linkTo(API_TOKEN), page.getByTestId('asset-change-review'));

  // The same tab: only the fragment changes, so the page is not loaded again.
  await page.evaluate((token) => (location.hash = `token=${encodeURIComponent(token)}`), mallory.token);
  await expect(page.getByTestId('link-sign-in-next')).toHaveText(MALLORY);
  expect(fragmentOf(page)).toBe('');
  await page.getByTestId('link-sign-in-switch').click();
  await expect(page.getByTestId('user-name')).toHaveText('User mallory');
  expect(await storedToken(page)).toBe(mallory.token);

  await page.evaluate(() => (location.hash = 'token=forged-or-expired-token'));
  await expect(dialog(page)).toContainText("The link's sign-in is not valid");
  await expect(page.getByTestId('link-sign-in-current')).toHaveText(MALLORY);
  await page.getByTestId('link-sign-in-ok').click();
  await expect(dialog(page)).toHaveCount(0);
  await expect(page.getByTestId('user-name')).toHaveText('User mallory');
  expect(await storedToken(page)).toBe(mallory.token);
  expect(fragmentOf(page)).toBe('');
});
