import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { expect, fromHeader, openStudio, test } from './studio.fixtures';

/**
 * A second server on a machine that cannot confine stdio MCP servers (its `unshare` fails, as in a container without
 * the right to make namespaces), with authentication off as on the desktop: it runs them unconfined, and says so.
 */
let server: ServerProcess;
let refusing: string;

test.beforeAll(async () => {
  refusing = fs.mkdtempSync(path.join(os.tmpdir(), 'no-namespaces-'));
  fs.writeFileSync(
    path.join(refusing, 'unshare'),
    '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n',
    { mode: 0o755 },
  );
  server = await spawnServer({
    DATABASE_URL: process.env.E2E_DATABASE_URL!,
    LOCAL_LLM_BASE: process.env.E2E_MODEL_URL!,
    DEFAULT_MODEL: 'fake-model',
    AUTH_ENABLED: 'false',
    PATH: `${refusing}:${process.env.PATH}`,
  });
});

test.afterAll(async () => {
  await server?.stop();
  fs.rmSync(refusing, { recursive: true, force: true });
});

test('Settings warn that stdio MCP servers run unconfined where the machine cannot confine them, and only there', async ({
  page,
}) => {
  await page.goto(`${server.url}/ui`);
  await expect(page.getByTestId('asset-change-review')).toBeVisible();
  await fromHeader(page, 'settings-open');
  const dialog = page.getByRole('dialog', { name: 'Settings' });
  await expect(dialog.getByTestId('stdio-unconfined')).toContainText(
    "MCP servers that agents start as programs (stdio) run unconfined here: this machine does not let the service give them a process namespace of their own, so such a server can read the environment of the service's processes, its secrets included.",
  );
  await page.keyboard.press('Escape');

  // The browser tests' own server confines them: its Settings say nothing of it.
  await openStudio(page);
  await fromHeader(page, 'settings-open');
  await expect(dialog.getByRole('heading', { name: 'Personal access tokens' })).toBeVisible();
  await expect(dialog.getByTestId('stdio-unconfined')).toHaveCount(0);
});
