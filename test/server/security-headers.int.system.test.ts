import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declaredOperations, renderedOperations } from '../helpers/api-docs';
import { launchChromium } from '../helpers/browser';
import { useIntegrationServer } from '../helpers/integration';

// The shipped assets and no model: the pages, under the policies security-headers.int.test.ts checks, are all this
// file reads.
const ctx = useIntegrationServer({ model: false, catalog: false, server: { AUTH_ENABLED: 'true' } });
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(() => browser?.close());

/** Opens a page and collects every content-policy violation it reports. */
async function open(path: string): Promise<{ page: Page; violations: () => Promise<string[]> }> {
  const page = await browser.newPage();
  const console: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) console.push(message.text());
  });
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { violations: string[] }).violations = seen;
    document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(`${ctx.server.url}${path}`);
  return {
    page,
    violations: async () => [
      ...console,
      ...(await page.evaluate(() => (window as unknown as { violations: string[] }).violations)),
    ],
  };
}

describe('the pages still work in Chromium under their policies', () => {
  it('the portal: its stylesheet applies and its script adds the copy buttons', async () => {
    const { page, violations } = await open('/');
    await expect.poll(() => page.locator('button.copy').count()).toBeGreaterThan(0);
    const background = await page
      .locator('.links a')
      .first()
      .evaluate((a) => getComputedStyle(a).backgroundColor);
    expect(background).toBe('rgb(79, 70, 229)');
    expect(await violations()).toEqual([]);
    await page.close();
  });

  it('the API docs render every operation', async () => {
    const { page, violations } = await open('/docs');
    const rendered = await renderedOperations(page);
    expect([...(await declaredOperations(ctx.server.url))].filter((op) => !rendered.has(op))).toEqual([]);
    // The last one drawn (at the bottom of the page) opens to its body.
    await page.locator('.opblock-summary-path').last().click();
    await expect.poll(() => page.locator('.opblock-body').count()).toBeGreaterThan(0);
    expect(await violations()).toEqual([]);
    await page.close();
  });

  it('the sign-in failure page keeps its style', async () => {
    const { page, violations } = await open('/auth/login');
    expect(await page.locator('h1').textContent()).toBe('Sign-in failed');
    expect(await page.locator('body').evaluate((b) => getComputedStyle(b).maxWidth)).toBe('640px');
    expect(await violations()).toEqual([]);
    await page.close();
  });
});
