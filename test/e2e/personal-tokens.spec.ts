import AxeBuilder from '@axe-core/playwright';
import { api, expect, openStudio, screenshotPath, test, fromHeader } from './studio.fixtures';

test('Settings → Personal access tokens: made with a name, shown once, listed with their use, revoked after asking', async ({
  page,
  context,
}) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await openStudio(page);
  await fromHeader(page, 'settings-open');
  const dialog = page.getByRole('dialog', { name: 'Settings' });
  const tokens = dialog.getByTestId('personal-tokens');
  const name = `e2e script ${Date.now()}`;

  await tokens.getByLabel('Token name').fill(name);
  await tokens.getByRole('button', { name: 'Create token' }).click();
  const created = tokens.getByTestId('created-token');
  await expect(created).toContainText('It will not be shown again.');
  const token = (await created.locator('code').textContent())!;
  expect(token).toMatch(/^svcpat_[A-Za-z0-9_-]{43}$/);
  await created.getByRole('button', { name: 'Copy', exact: true }).click();
  await expect(created).toContainText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
  // The configuration an MCP client takes, with this token filled in, to copy from the browser as from the app.
  const config = JSON.parse((await created.getByTestId('created-token-mcp-config').textContent())!) as {
    mcpServers: Record<string, { type: string; url: string; headers: Record<string, string> }>;
  };
  expect(config.mcpServers['agent-workflow']).toEqual({
    type: 'http',
    url: `${new URL(page.url()).origin}/mcp`,
    headers: { Authorization: `Bearer ${token}` },
  });
  await created.getByRole('button', { name: 'Copy MCP configuration' }).click();
  expect(JSON.parse(await page.evaluate(() => navigator.clipboard.readText()))).toEqual(config);
  // The server answers MCP with it: the configuration works as it is.
  const mcp = await fetch(config.mcpServers['agent-workflow']!.url, {
    method: 'POST',
    headers: {
      ...config.mcpServers['agent-workflow']!.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } },
    }),
  });
  expect(mcp.status).toBe(200);
  await dialog.screenshot({ path: screenshotPath('personal-tokens') });
  const axe = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);

  const row = tokens.getByTestId('personal-token').filter({ hasText: name });
  await expect(row).toContainText(token.slice(0, 13));
  await expect(row.locator('td').nth(2)).toHaveText('never');
  // A script uses it; the list, read again, says when.
  expect((await api('/auth/me', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  await created.getByRole('button', { name: 'Done' }).click();
  await expect(created).toHaveCount(0);
  await dialog.getByRole('button', { name: 'Close' }).click();
  await fromHeader(page, 'settings-open');
  await expect(row.locator('td').nth(2)).not.toHaveText('never');
  await expect(tokens).not.toContainText(token);

  await row.getByRole('button', { name: `Revoke ${name}` }).click();
  await expect(row).toContainText('Clients using it stop working.');
  await row.getByRole('button', { name: 'Revoke', exact: true }).click();
  await expect(row).toHaveCount(0);
  expect((await api('/auth/me', { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
});
