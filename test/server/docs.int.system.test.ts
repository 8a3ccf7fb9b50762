import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser';
import { useIntegrationServer } from '../helpers/integration';

// The shipped assets and no model: the docs page is all this test reads.
const ctx = useIntegrationServer({ model: false, catalog: false, server: { AUTH_ENABLED: 'true' } });
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(() => browser?.close());

it('renders the interactive API docs in a real browser, without a token', async () => {
  const page = await browser.newPage();
  const failed: string[] = [];
  page.on('requestfailed', (request) => failed.push(request.url()));
  await page.goto(`${ctx.server.url}/docs`);
  await expect.poll(() => page.locator('.opblock-summary-path').count(), { timeout: 15_000 }).toBeGreaterThan(10);
  expect(await page.locator('.opblock-summary-path', { hasText: '/graphs/{agent}/run' }).count()).toBe(1);
  expect(await page.title()).toContain('API docs');
  expect(failed).toEqual([]);
  await page.screenshot({ path: 'test-results/docs.png' });
});
