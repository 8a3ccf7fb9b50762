import { freePort } from '../helpers/ports';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { expect, screenshotPath, startRun, test } from './studio.fixtures';

/** A second server whose local runtime is not running, with authentication off, on the browser tests' database. */
let server: ServerProcess;

test.beforeAll(async () => {
  server = await spawnServer({
    DATABASE_URL: process.env.E2E_DATABASE_URL!,
    LOCAL_LLM_BASE: `http://127.0.0.1:${await freePort()}`,
    DEFAULT_MODEL: 'fake-model',
    AUTH_ENABLED: 'false',
  });
});

test.afterAll(async () => {
  await server?.stop();
});

test('an offline runtime turns the header red, and a run fails with the connection error', async ({ page }) => {
  await page.goto(`${server.url}/ui`);
  const runtime = page.getByTestId('runtime-status');
  await expect(runtime).toHaveText('Local runtime offline · 0 models');
  await expect(runtime).toHaveCSS('background-color', 'rgb(220, 38, 38)');
  // Authentication is off: nobody signs in, so there is nothing to sign out of.
  await page.getByTestId('header-more').click();
  await expect(page.getByTestId('header-menu')).toBeVisible();
  await expect(page.getByTestId('sign-out')).toHaveCount(0);
  await page.keyboard.press('Escape');

  await page.getByTestId('asset-repo-summary').click();
  await startRun(page, 'Summarise without a runtime');
  await expect(page.getByTestId('run-status')).toContainText('✕ Run failed');
  await expect(page.getByTestId('run-error')).toContainText('ConnectionRefusedError');
  await page.screenshot({ path: screenshotPath('11-runtime-offline') });
});
