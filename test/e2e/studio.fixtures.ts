import path from 'node:path';
import { test as base, expect, type Locator, type Page } from '@playwright/test';
import pg from 'pg';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the browser tests with npm run test:e2e`);
  return value;
};

export const baseUrl = () => env('E2E_BASE_URL');

/** Screenshots of the main screens, in the test output folder (see playwright.config.ts). */
export const screenshotPath = (name: string) =>
  path.resolve(import.meta.dirname, '../../test-results/e2e/screenshots', `${name}.png`);
export const token = () => env('E2E_TOKEN');

/** A text as the tokens the fake model runtime streams: one a word. */
export const words = (text: string) => text.split(' ').map((w) => `${w} `);

/** Tells the fake model runtime what to stream next. */
export async function script(tokens: string[], delayMs = 0): Promise<void> {
  await fetch(`${env('E2E_MODEL_URL')}/__script`, { method: 'POST', body: JSON.stringify({ tokens, delayMs }) });
}

/**
 * Tells the fake model runtime what some models answer instead of the scripted tokens, by the model's name without
 * its provider (`{ 'llama3.2': words('…') }`); `{}` ends it, and every model answers the script again.
 */
export async function scriptByModel(repliesByModel: Record<string, string[]>): Promise<void> {
  await fetch(`${env('E2E_MODEL_URL')}/__script`, { method: 'POST', body: JSON.stringify({ repliesByModel }) });
}

/** A tool call as the fake runtime's model makes it: the name it was offered (`<server>__<tool>`), its arguments. */
export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * Tells the fake model runtime how its next calls that offer tools answer, turn by turn: each turn's tool calls, in
 * one message as Ollama sends them. Once they are used up, such calls get the scripted tokens.
 */
export async function scriptToolTurns(turns: ScriptedToolCall[][]): Promise<void> {
  await fetch(`${env('E2E_MODEL_URL')}/__script`, { method: 'POST', body: JSON.stringify({ toolTurns: turns }) });
}

/** The prompts the fake model runtime's Ollama calls were given, in order, after the first `since`. */
export async function prompts(since = 0): Promise<{ model: string; used: string }[]> {
  const res = await fetch(`${env('E2E_MODEL_URL')}/__prompts?since=${since}`);
  return (await res.json()) as { model: string; used: string }[];
}

export async function failModel(status: number, message: string): Promise<void> {
  await fetch(`${env('E2E_MODEL_URL')}/__script`, {
    method: 'POST',
    body: JSON.stringify({ fail: { status, message } }),
  });
}

export function api(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  return fetch(`${baseUrl()}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${token()}`,
      ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.headers as Record<string, string>),
    },
    body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
  });
}

export async function sql<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: env('E2E_DATABASE_URL') });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * Opens a studio link (`/ui#token=…`) as a person does and waits for `ready`: a link the studio did not ask for
 * (it asks for its own sign-in's only) shows who it signs in as, and the person agrees; a tab that already holds the
 * link's token opens without a question.
 */
export async function signInByLink(page: Page, url: string, ready: Locator): Promise<void> {
  await page.goto(url);
  const agree = page.getByTestId('link-sign-in-switch');
  await expect(agree.or(ready)).toBeVisible();
  if (await agree.isVisible()) await agree.click();
  await expect(ready).toBeVisible();
}

/** Opens the studio signed in with the token from the URL fragment, as the start-up link does. */
export async function openStudio(page: Page, agent = 'change-review'): Promise<void> {
  await signInByLink(page, `${baseUrl()}/ui#token=${token()}`, page.getByTestId(`asset-${agent}`));
  await page.getByTestId(`asset-${agent}`).click();
  await expect(page.getByTestId('phase-intake').or(page.getByTestId('phase-dispatch'))).toBeVisible();
}

export async function startRun(page: Page, message: string): Promise<void> {
  await page.getByTestId('run-message').fill(message);
  const continueThread = page.getByTestId('run-continue-thread');
  if (await continueThread.isVisible()) await continueThread.uncheck();
  await page.getByTestId('run-submit').click();
}

/** Starts a run whose model answers `answer`, and waits until it completes; resolves with its run id. */
export async function completeRun(page: Page, message: string, answer: string): Promise<string | null> {
  await script(words(answer));
  await startRun(page, message);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  return page.getByTestId('run-id').getAttribute('data-id');
}

/**
 * Starts a repo-summary run through the API that holds the single local-runtime slot while it streams
 * 200 tokens (`${prefix}0 `, `${prefix}1 `, …); cancel the returned reader to stop listening.
 */
export async function holdTheSlot(message: string, prefix: string) {
  await script(
    Array.from({ length: 200 }, (_, i) => `${prefix}${i} `),
    40,
  );
  const blocker = await api('/graphs/repo-summary/run', { method: 'POST', json: { message } });
  const reader = blocker.body!.getReader();
  await reader.read();
  return reader;
}

export const phase = (page: Page, id: string) => page.getByTestId(`phase-${id}`);

/**
 * Presses a header control (`settings-open`, `sign-out`, `models-open`…): where the window is too narrow for it to
 * sit in the header, it is in the More menu, which is opened first.
 */
export async function fromHeader(page: Page, testId: string): Promise<void> {
  const control = page.getByTestId(testId);
  if (!(await control.isVisible())) await page.getByTestId('header-more').click();
  await control.click();
}

export const test = base.extend({
  page: async ({ page }, use, testInfo) => {
    await script(['ok']);
    await use(page);
    await page.screenshot({ path: testInfo.outputPath('final.png') }).catch(() => undefined);
  },
});
export { expect };
