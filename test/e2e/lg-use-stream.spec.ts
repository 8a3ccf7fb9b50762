import path from 'node:path';
import { build } from 'vite';
import { baseUrl, expect, script, test, token, words } from './studio.fixtures';

/**
 * LangChain's React `useStream` against the LangGraph API (docs/langgraph-api.md), in Chromium: the tests' own page
 * (test/e2e/lg-page) built with Vite and served on the server's origin, as an app a developer writes would use it.
 */
const pageDir = path.join(import.meta.dirname, 'lg-page');
const outDir = path.resolve(import.meta.dirname, '../../test-results/lg-page');

test.beforeAll(async () => {
  test.setTimeout(120_000);
  await build({
    root: pageDir,
    base: './',
    configFile: false,
    logLevel: 'error',
    build: { outDir, emptyOutDir: true },
  });
});

test('useStream streams a message to the gate, approves it, and shows the thread again after a reload', async ({
  page,
}) => {
  await page.route(`${baseUrl()}/lg-page/**`, (route) =>
    route.fulfill({ path: path.join(outDir, new URL(route.request().url()).pathname.slice('/lg-page/'.length)) }),
  );
  await page.goto(`${baseUrl()}/lg-page/index.html?key=${token()}&agent=change-review`);
  await expect(page.getByTestId('status')).toHaveText('idle');

  // The model answers slowly, word by word: the text grows on the page while the run streams.
  await script(words('The change looks safe to ship'), 120);
  await page.getByTestId('message').fill('Review the retry change');
  await page.getByTestId('send').click();
  await expect(page.getByTestId('message-human')).toHaveText('Review the retry change');
  const firstAnswer = page.getByTestId('message-ai').first();
  await expect(firstAnswer).toContainText('The change');
  await expect(page.getByTestId('status')).toHaveText('streaming');
  await expect(firstAnswer).toHaveText(/The change looks safe to ship/);

  // The gate stops the run: its interrupt shows what it asks about, and the stream is over.
  const interrupt = page.getByTestId('interrupt');
  await expect(interrupt).toBeVisible();
  await expect(page.getByTestId('interrupt-args')).toContainText('The change looks safe to ship');
  await expect(page.getByTestId('status')).toHaveText('idle');
  await expect(page.getByTestId('error')).toHaveCount(0);

  // A reload finds the thread and its interrupt again, from the history useStream fetches.
  expect(new URL(page.url()).searchParams.get('thread')).toBeTruthy();
  await page.reload();
  await expect(interrupt).toBeVisible();
  await expect(page.getByTestId('message-human')).toHaveText('Review the retry change');

  // Approving resumes the run: its last phase publishes the approved review, as its own message.
  const published = page.locator('[data-testid="message-ai"][data-name="output"]');
  await expect(published).toHaveCount(0);
  await page.getByTestId('approve').click();
  await expect(interrupt).toHaveCount(0);
  await expect(published).toHaveText(/The change looks safe to ship/);
  await expect(page.getByTestId('finished')).toHaveText('1');
  await expect(page.getByTestId('status')).toHaveText('idle');

  // After another reload the whole conversation is there, from the history, with nothing left to decide.
  await page.reload();
  await expect(page.getByTestId('message-human')).toHaveText('Review the retry change');
  await expect(published).toHaveText(/The change looks safe to ship/);
  await expect(page.getByTestId('history')).not.toHaveText('0');
  await expect(interrupt).toHaveCount(0);
  await expect(page.getByTestId('error')).toHaveCount(0);
});
