import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser';
import { createTestDatabase, type TestDatabase } from '../helpers/database';
import { startTestServer, type TestServer } from '../helpers/server';

let db: TestDatabase;
let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(db.url, { AUTH_ENABLED: 'true' });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await db?.drop();
});

it('renders the interactive API docs in a real browser, without a token', async () => {
  const page = await browser.newPage();
  const failed: string[] = [];
  page.on('requestfailed', (request) => failed.push(request.url()));
  await page.goto(`${server.url}/docs`);
  await expect.poll(() => page.locator('.opblock-summary-path').count(), { timeout: 15_000 }).toBeGreaterThan(10);
  expect(await page.locator('.opblock-summary-path', { hasText: '/graphs/{agent}/run' }).count()).toBe(1);
  expect(await page.title()).toContain('API docs');
  expect(failed).toEqual([]);
  await page.screenshot({ path: 'test-results/docs.png' });
});
