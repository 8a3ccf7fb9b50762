import AxeBuilder from '@axe-core/playwright';
import { createHash, randomBytes } from 'node:crypto';
import { mcpInitialize } from '../helpers/mcp-initialize';
import { useOidcServer } from './oidc-server';
import { expect, fromHeader, screenshotPath, test } from './studio.fixtures';

/**
 * An MCP client signs its person in with OAuth, as she sees it: she is signed in to the studio; the client sends her
 * browser to the service, which (the provider remembering her) shows its consent page; she allows it; later she finds
 * the client in Settings beside her personal access tokens and signs it out, and its token answers 401.
 */
const server = useOidcServer({ SESSION_SECRET: 'session-secret-for-the-e2e-mcp-oauth-0123' });
const REDIRECT = 'http://127.0.0.1:47124/callback';

const initialize = (accessToken: string) => mcpInitialize(`${server.url}/mcp`, accessToken);

test('an MCP client signs in on the consent page, and its person signs it out in Settings', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`${server.url}/ui`);
  await page.getByTestId('sign-in-oidc').click();
  await page.fill('input[name=login]', 'hana');
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  await page.waitForURL((url) => url.href.startsWith(server.url) || url.pathname.includes('interaction'));
  if (!page.url().startsWith(server.url)) await page.click('button[type=submit]');
  await expect(page.getByTestId('user-name')).toHaveText('User hana');

  // The client registers and opens the authorization request in her browser.
  const registered = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Hana’s editor',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    }),
  });
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL(`${server.url}/oauth/authorize`);
  for (const [key, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'e2e-state',
  }))
    authorize.searchParams.set(key, value);
  let landed = '';
  await page.route(`${REDIRECT}**`, (route) => {
    landed = route.request().url();
    return route.fulfill({ contentType: 'text/plain', body: 'You may close this page.' });
  });
  await page.goto(authorize.href);
  if (page.url().includes('interaction')) await page.click('button[type=submit]');

  await expect(page.getByRole('heading', { name: 'Allow an MCP client to act as you?' })).toBeVisible();
  await expect(page.getByText('Hana’s editor', { exact: true })).toBeVisible();
  await expect(page.getByText('the service cannot vouch for it')).toBeVisible();
  await expect(page.getByText('You are signed in as User hana.')).toBeVisible();
  await page.screenshot({ path: screenshotPath('mcp-oauth-consent'), fullPage: true });
  const axe = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
  await page.getByRole('button', { name: 'Allow' }).click();
  await expect.poll(() => landed).toContain('code=');
  const back = new URL(landed);
  expect(back.searchParams.get('state')).toBe('e2e-state');

  const exchanged = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: clientId,
      code: back.searchParams.get('code')!,
      code_verifier: verifier,
    }).toString(),
  });
  const tokens = (await exchanged.json()) as { access_token: string };
  expect((await initialize(tokens.access_token)).status).toBe(200);

  await page.goto(`${server.url}/ui`);
  await fromHeader(page, 'settings-open');
  const dialog = page.getByRole('dialog', { name: 'Settings' });
  const signIns = dialog.getByTestId('mcp-sign-ins');
  await expect(signIns.getByRole('heading', { name: 'MCP clients signed in as you' })).toBeVisible();
  const row = signIns.getByTestId('mcp-grant').filter({ hasText: 'Hana’s editor' });
  await expect(row).toBeVisible();
  await signIns.screenshot({ path: screenshotPath('mcp-oauth-settings') });
  await row.getByRole('button', { name: 'Sign Hana’s editor out' }).click();
  await expect(signIns.getByTestId('mcp-grant-revoke-cancel')).toBeFocused();
  await signIns.getByRole('button', { name: 'Sign out', exact: true }).click();
  await expect(signIns.getByTestId('mcp-grant')).toHaveCount(0);
  await expect(signIns).toContainText('None: an MCP client that signs in with OAuth shows here');
  expect((await initialize(tokens.access_token)).status).toBe(401);
});
