import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { declaredOperations, renderedOperations } from '../helpers/api-docs';
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
  // Every operation of the document is drawn as the page scrolls (Swagger UI draws a long list as it comes into view).
  const rendered = await renderedOperations(page);
  expect([...(await declaredOperations(ctx.server.url))].filter((op) => !rendered.has(op))).toEqual([]);
  expect(rendered.has('POST /graphs/{agent}/run')).toBe(true);
  expect(await page.title()).toContain('API docs');
  expect(failed).toEqual([]);
  await page.screenshot({ path: 'test-results/docs.png' });
});
