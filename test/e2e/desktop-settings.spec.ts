import { expect, openStudio, screenshotPath, test, fromHeader } from './studio.fixtures';

test('The desktop settings appear only inside the desktop app, which provides window.desktop', async ({ page }) => {
  // In a browser, signed in to a server that asks for tokens, Settings hold the person's tokens only.
  await openStudio(page);
  await fromHeader(page, 'settings-open');
  const dialog = page.getByRole('dialog', { name: 'Settings' });
  await expect(dialog.getByRole('heading', { name: 'Personal access tokens' })).toBeVisible();
  await expect(dialog.getByTestId('desktop-settings')).toHaveCount(0);
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();

  // A stand-in for the preload bridge: the studio only decides whether to offer the desktop settings.
  await page.addInitScript(() => {
    const pending = () => new Promise(() => undefined);
    Object.defineProperty(window, 'desktop', { value: new Proxy({}, { get: () => pending }) });
  });
  await page.reload();
  await fromHeader(page, 'settings-open');
  await expect(dialog).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
});

test('Settings say which saved value the app could not use, and why a correction is refused', async ({ page }) => {
  // A stand-in for the preload bridge, answering as the main process does for a runtime address saved without
  // its scheme: the server started with the default, and saving the same mistake is refused.
  await page.addInitScript(() => {
    const problem =
      'the local model runtime address must be an http:// or https:// URL, such as http://127.0.0.1:11434';
    const saved: unknown[] = [];
    Object.defineProperty(window, 'e2eSaved', { value: saved });
    Object.defineProperty(window, 'desktop', {
      value: {
        getSettings: async () => ({ database: { mode: 'embedded' }, localLlmBase: '192.168.1.5:11434' }),
        appInfo: async () => ({
          version: '0.0.0',
          apiUrl: location.origin,
          apiToken: 'token',
          serverError: null,
          settingsProblems: [problem],
          keychain: { available: true, reason: null },
        }),
        secretStatus: async () => ({}),
        mcpClient: async () => ({ url: `${location.origin}/mcp`, token: null, config: null }),
        setSettings: async (settings: { localLlmBase: string | null }) => {
          if (!settings.localLlmBase?.startsWith('http')) {
            throw new Error(`Error invoking remote method 'settings:set': Error: ${problem}`);
          }
          saved.push(settings);
          return settings;
        },
      },
    });
  });
  await openStudio(page);
  await fromHeader(page, 'settings-open');
  const dialog = page.getByRole('dialog', { name: 'Settings' });
  await expect(dialog.getByTestId('settings-problems')).toContainText(
    'the local model runtime address must be an http:// or https:// URL',
  );
  const runtime = dialog.getByPlaceholder('http://127.0.0.1:11434');
  await expect(runtime).toHaveValue('192.168.1.5:11434');

  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(dialog.getByRole('alert')).toHaveText(
    'Not saved: the local model runtime address must be an http:// or https:// URL, such as http://127.0.0.1:11434',
  );
  await runtime.fill('http://192.168.1.5:11434');
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(dialog.getByRole('alert')).toHaveCount(0);
  expect(await page.evaluate(() => (window as unknown as { e2eSaved: unknown[] }).e2eSaved)).toEqual([
    { database: { mode: 'embedded' }, localLlmBase: 'http://192.168.1.5:11434' },
  ]);
});

test('Settings → MCP clients make a token, show the configuration to copy, and replace it after asking', async ({
  page,
}) => {
  // A stand-in for the preload bridge, answering as the main process does (src-main/mcp-client.ts).
  await page.addInitScript(() => {
    let made = 0;
    const client = (token: string | null) => ({
      url: `${location.origin}/mcp`,
      token,
      config: token
        ? JSON.stringify(
            {
              mcpServers: {
                'agent-workflow': {
                  type: 'http',
                  url: `${location.origin}/mcp`,
                  headers: { Authorization: `Bearer ${token}` },
                },
              },
            },
            null,
            2,
          )
        : null,
    });
    Object.defineProperty(window, 'desktop', {
      value: {
        getSettings: async () => ({ database: { mode: 'embedded' }, localLlmBase: null }),
        appInfo: async () => ({
          version: '0.0.0',
          apiUrl: location.origin,
          apiToken: 'token',
          serverError: null,
          settingsProblems: [],
          keychain: { available: true, reason: null },
        }),
        secretStatus: async () => ({}),
        mcpClient: async () => client(null),
        newMcpToken: async () => client(`svcpat_made-${++made}`),
      },
    });
  });
  await openStudio(page);
  await fromHeader(page, 'settings-open');
  const mcp = page.getByRole('dialog', { name: 'Settings' }).getByTestId('mcp-clients');
  await expect(mcp).toContainText('/mcp');
  await mcp.getByRole('button', { name: 'Create a token for MCP clients' }).click();
  await expect(mcp.getByTestId('mcp-config')).toContainText('"Authorization": "Bearer svcpat_made-1"');
  await mcp.screenshot({ path: screenshotPath('desktop-mcp-clients') });

  await mcp.getByRole('button', { name: 'Replace token…' }).click();
  await expect(mcp).toContainText('Clients using the current token stop working.');
  await mcp.getByRole('button', { name: 'Replace token', exact: true }).click();
  await expect(mcp.getByTestId('mcp-config')).toContainText('"Authorization": "Bearer svcpat_made-2"');
});
