import { startModelFake, type ModelFake } from '../fixtures/fake-models';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { expect, screenshotPath, test } from './studio.fixtures';

/**
 * The header's local runtime: online with the number of models it has, red and offline once it stops. A server of
 * its own on the browser tests' database, with authentication off, and a runtime this spec starts and stops.
 */
let runtime: ModelFake;
let server: ServerProcess;

test.beforeAll(async () => {
  runtime = await startModelFake();
  server = await spawnServer({
    DATABASE_URL: process.env.E2E_DATABASE_URL!,
    LOCAL_LLM_BASE: runtime.url,
    DEFAULT_MODEL: 'fake-model',
    AUTH_ENABLED: 'false',
  });
});

test.afterAll(async () => {
  await server?.stop();
  await runtime?.close();
});

test('the header shows the local runtime online with its model count, and red and offline once it stops', async ({
  page,
}) => {
  await page.goto(`${server.url}/ui`);
  const status = page.getByTestId('runtime-status');
  await expect(status).toHaveText('Local runtime · 2 models');
  // --green-text on the badge's soft background, not the offline red.
  await expect(status).toHaveCSS('color', 'rgb(20, 122, 57)');
  await expect(status).not.toHaveCSS('background-color', 'rgb(220, 38, 38)');
  await expect(status).not.toHaveAttribute('title');

  // A model pulled into the runtime is counted at the header's next look, without a reload.
  runtime.models = [...runtime.models, 'mistral'];
  await expect(status).toHaveText('Local runtime · 3 models');
  await page.screenshot({ path: screenshotPath('runtime-online') });

  // The runtime stops: the header turns red, and its tooltip says why.
  await runtime.close();
  await expect(status).toHaveText('Local runtime offline · 0 models');
  await expect(status).toHaveCSS('background-color', 'rgb(220, 38, 38)');
  await expect(status).toHaveCSS('color', 'rgb(255, 255, 255)');
  await expect(status).toHaveAttribute(
    'title',
    'ConnectionRefusedError: cannot reach the local model runtime (connection refused): is it running?',
  );
  await page.screenshot({ path: screenshotPath('runtime-went-offline') });
});
