import type { Locator, Page } from '@playwright/test';
import { expect, test } from './studio.fixtures';
import { openStudio, phase, screenshotPath as shot, script, startRun, token } from './studio.fixtures';

/** A text as the model streams it: pieces of a few characters, so markdown arrives cut anywhere. */
const pieces = (text: string, size = 7) =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

const MARKDOWN = [
  '# Summary of the change',
  '',
  'The loader is **renamed** and gains `strict` mode.',
  '',
  '- one service',
  '- its tests',
  '',
  '| file | lines |',
  '|---|---|',
  '| loader.ts | 42 |',
  '',
  '```ts',
  'const answer: number = 42;',
  '```',
  '',
].join('\n');

/** What a model could be made to write to attack whoever reads its output. */
const HOSTILE = [
  '## Report',
  '',
  '<script>window.__pwned = "script tag"</script>',
  '',
  '<img src="https://tracker.example/raw-html.png" onerror="window.__pwned = \'onerror\'">',
  '',
  '[click me](javascript:window.__pwned="javascript link")',
  '',
  '<a href="javascript:window.__pwned=\'raw link\'" onclick="window.__pwned=\'onclick\'">raw link</a>',
  '',
  '![tracking pixel](https://tracker.example/pixel.png)',
  '',
  '<javascript:window.__pwned="autolink">',
  '',
  '[safe link](https://example.com/docs)',
  '',
].join('\n');

/** An output's HTML, its blocks' joined: what its markdown renders to, however it was cut into blocks. */
const renderedHtml = (output: Locator) =>
  output.evaluate((root) => [...root.querySelectorAll(':scope > .block')].map((block) => block.innerHTML).join(''));

const titleFor = (waiting: number) => (waiting > 0 ? `(${waiting}) Agent workflow studio` : 'Agent workflow studio');

/**
 * The thread of `message` is listed with `status`, and the title counts the approvals waiting among the threads
 * listed (other tests' runs may wait too).
 */
async function expectTitleCounts(page: Page, message: string, status: string): Promise<void> {
  await expect(page.getByTestId('thread-row').filter({ hasText: message }).first()).toHaveAttribute(
    'data-status',
    status,
  );
  await expect
    .poll(async () => {
      const listed = await page.locator('[data-testid="thread-row"][data-status="waiting_approval"]').count();
      return (await page.title()) === titleFor(listed);
    })
    .toBe(true);
  if (status === 'waiting_approval') await expect(page).toHaveTitle(/^\(\d+\) Agent workflow studio$/);
}

/** Everything the page asks the network for, and whether any script of the model's ran. */
function watchRequests(page: Page): string[] {
  const urls: string[] = [];
  page.on('request', (request) => urls.push(request.url()));
  return urls;
}
const pwned = (page: Page) => page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned ?? null);

test('phase output renders as markdown while it streams and when its thread is restored; Raw and Copy', async ({
  page,
  context,
}) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await openStudio(page, 'repo-summary');
  await script(pieces(MARKDOWN), 10);
  await startRun(page, 'Summarise in markdown');
  const output = page.getByTestId('transcript-dispatch');
  // While it streams: the heading is there before the code block has arrived.
  await expect(output.locator('h1')).toHaveText('Summary of the change');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(output).toHaveAttribute('data-format', 'markdown');
  // The output is taller than its pane, which follows it to the end.
  const scroll = () =>
    page.getByTestId('transcript').evaluate((el) => ({
      overflow: el.scrollHeight > el.clientHeight,
      left: el.scrollHeight - el.scrollTop - el.clientHeight,
    }));
  await expect.poll(async () => (await scroll()).overflow).toBe(true);
  await expect.poll(async () => (await scroll()).left).toBeLessThan(10);
  // Screen readers hear the status change, from the one live region; the streaming transcript is not one.
  await expect(page.getByTestId('run-announcer')).toHaveText('repo-summary completed.');
  await expect(page.getByTestId('run-announcer')).toHaveAttribute('aria-live', 'polite');
  await expect(page.getByTestId('transcript')).not.toHaveAttribute('aria-live');
  await expect(page.getByTestId('transcript').locator('[aria-live], [role="status"], [role="log"]')).toHaveCount(0);
  await expect(output.locator('strong')).toHaveText('renamed');
  await expect(output.locator('li')).toHaveText(['one service', 'its tests']);
  await expect(output.locator('table td')).toHaveText(['loader.ts', '42']);
  // Code is coloured: highlight.js marks the keyword and the number.
  await expect(output.locator('pre code .hljs-keyword').first()).toHaveText('const');
  await expect(output.locator('pre code .hljs-number')).toHaveText('42');
  await expect(output.locator('pre code .hljs-keyword').first()).not.toHaveCSS('color', 'rgb(0, 0, 0)');
  await page.screenshot({ path: shot('output-markdown') });
  const streamed = await renderedHtml(output);

  await page.getByTestId('transcript-raw-dispatch').click();
  await expect(output).toHaveAttribute('data-format', 'raw');
  await expect(output).toContainText('# Summary of the change');
  await expect(output).toContainText('| loader.ts | 42 |');
  await page.getByTestId('transcript-copy-dispatch').click();
  await expect(page.getByTestId('transcript-copy-dispatch')).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(MARKDOWN);
  await page.getByTestId('transcript-raw-dispatch').click();
  await expect(output.locator('h1')).toBeVisible();

  // Restored from the server: the same rendering.
  await page.reload();
  await page.getByTestId('asset-repo-summary').click();
  await page.getByTestId('thread-item').filter({ hasText: 'Summarise in markdown' }).click();
  await expect(page.getByTestId('transcript-dispatch').locator('h1')).toHaveText('Summary of the change');
  await expect(page.getByTestId('transcript-dispatch').locator('table td')).toHaveText(['loader.ts', '42']);
  // Rendered block by block as it streamed, rendered at once when restored: the same HTML.
  expect(await renderedHtml(page.getByTestId('transcript-dispatch'))).toBe(streamed);
});

test('the transcript follows a streaming answer while the reader is at its end, and leaves a reader who scrolled up', async ({
  page,
}) => {
  await openStudio(page, 'repo-summary');
  // Lines enough to overflow the pane many times, streamed over a few seconds.
  await script(
    Array.from({ length: 300 }, (_, i) => `Line ${i} of a long answer.\n\n`),
    15,
  );
  await startRun(page, 'A long answer, slowly');
  const transcript = page.getByTestId('transcript');
  const position = () =>
    transcript.evaluate((el) => ({ top: el.scrollTop, left: el.scrollHeight - el.scrollTop - el.clientHeight }));
  await expect.poll(async () => (await position()).top).toBeGreaterThan(200);
  // At the end while it grows.
  expect((await position()).left).toBeLessThan(10);

  // The reader scrolls up to read: more lines come, and the pane stays where they put it.
  await transcript.evaluate((el) => el.scrollTo({ top: 100 }));
  const shown = await page.getByTestId('transcript-dispatch').textContent();
  await expect
    .poll(async () => (await page.getByTestId('transcript-dispatch').textContent())!.length)
    .toBeGreaterThan(shown!.length + 200);
  expect((await position()).top).toBe(100);

  // Back at the end, it follows again to the last line.
  await transcript.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
  await expect(page.getByTestId('run-status')).toContainText('Run complete', { timeout: 30_000 });
  await expect(page.getByTestId('transcript-dispatch')).toContainText('Line 299 of a long answer.');
  await expect.poll(async () => (await position()).left).toBeLessThan(10);
});

test('hostile output is rendered inert: no script runs, no remote image loads, no javascript: link', async ({
  page,
}) => {
  const requests = watchRequests(page);
  const violations: string[] = [];
  await page.exposeFunction('__cspViolation', (v: string) => violations.push(v));
  await page.addInitScript(() =>
    document.addEventListener('securitypolicyviolation', (e) =>
      (window as unknown as { __cspViolation(v: string): void }).__cspViolation(
        `${e.violatedDirective} ${e.blockedURI}`,
      ),
    ),
  );
  await openStudio(page, 'repo-summary');
  await script(pieces(HOSTILE, 9), 5);
  await startRun(page, 'Write something hostile');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  const output = page.getByTestId('transcript-dispatch');
  await expect(output.locator('h2')).toHaveText('Report');

  // Raw HTML is shown as the text it is, not as elements.
  await expect(output).toContainText('<script>window.__pwned = "script tag"</script>');
  await expect(output.locator('script, img, iframe, object, embed, svg, style')).toHaveCount(0);
  // No element carries an event handler; no link goes anywhere but the web.
  const handlers = await output.evaluate((root) =>
    [...root.querySelectorAll('*')].flatMap((el) =>
      [...el.attributes].filter((a) => /^on/i.test(a.name)).map((a) => a.name),
    ),
  );
  expect(handlers).toEqual([]);
  const links = await output
    .locator('a')
    .evaluateAll((all) =>
      all.map((a) => ({ href: a.getAttribute('href'), target: a.getAttribute('target'), rel: a.getAttribute('rel') })),
    );
  // The only links are web addresses (the raw <img>'s address, shown as text, is linkified: a link, not a load).
  expect(links.map((l) => l.href)).toEqual(['https://tracker.example/raw-html.png', 'https://example.com/docs']);
  for (const link of links) expect(link).toMatchObject({ target: '_blank', rel: 'noopener noreferrer nofollow' });
  // The markdown link to javascript: is plain text; clicking it does nothing.
  await expect(output).toContainText('[click me](javascript:window.__pwned="javascript link")');
  // The remote image is named, not loaded.
  await expect(output.locator('.md-image-blocked')).toHaveText('[image not loaded: tracking pixel]');

  await output.getByText('raw link', { exact: false }).first().click();
  expect(await pwned(page)).toBeNull();
  expect(requests.filter((url) => url.includes('tracker.example'))).toEqual([]);
  // Nothing even tried to break the content policy.
  expect(violations).toEqual([]);
  await page.screenshot({ path: shot('output-hostile-inert') });

  // Restored from the server it is just as inert.
  await page.reload();
  await page.getByTestId('asset-repo-summary').click();
  await page.getByTestId('thread-item').filter({ hasText: 'Write something hostile' }).click();
  await expect(page.getByTestId('transcript-dispatch').locator('h2')).toHaveText('Report');
  await expect(page.getByTestId('transcript-dispatch').locator('script, img')).toHaveCount(0);
  expect(await pwned(page)).toBeNull();
  expect(requests.filter((url) => url.includes('tracker.example'))).toEqual([]);
});

test('each phase shows how long it ran, its queue wait and its tokens; the State tab the totals', async ({ page }) => {
  await openStudio(page);
  await script(
    Array.from({ length: 12 }, (_, i) => `w${i} `),
    40,
  );
  await startRun(page, 'Review with timings');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  for (const id of ['intake', 'analysis']) {
    await expect(page.getByTestId(`phase-duration-${id}`)).toHaveText(/^(\d+ ms|\d+\.\d s)$/);
    await expect(page.getByTestId(`phase-tokens-${id}`)).toHaveText(/^~?\d+ tok$/);
    await expect(page.getByTestId(`phase-queued-${id}`)).toHaveText(/^queue (\d+ ms|\d+\.\d s)$/);
  }
  // The gate counts how long the approval has waited.
  await expect(page.getByTestId('phase-duration-gate')).toHaveText(/^waiting (\d+ ms|\d+\.\d s)$/);
  const gateWaited = await page.getByTestId('phase-duration-gate').textContent();
  await expect(page.getByTestId('phase-duration-gate')).not.toHaveText(gateWaited!);
  // Twelve tokens 40 ms apart: the phase ran for about half a second at least.
  const [, value, unit] = /([\d.]+) (ms|s)$/.exec((await page.getByTestId('phase-duration-intake').textContent())!)!;
  expect(Number(value) * (unit === 's' ? 1000 : 1)).toBeGreaterThanOrEqual(440);
  await page.getByTestId('tab-state').click();
  await expect(page.getByTestId('state-total-time')).toHaveText(/ in [23] phases$/);
  await expect(page.getByTestId('state-total-queue')).toHaveText(/queued$/);
  await expect(page.getByTestId('state-total-tokens')).toHaveText(/output tokens$/);
  await page.screenshot({ path: shot('output-phase-timings') });

  // After a reload the figures are the server's.
  const runId = await page.getByTestId('run-id').getAttribute('data-id');
  await page.reload();
  await page.getByTestId('thread-item').filter({ hasText: 'Review with timings' }).click();
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', runId!);
  await expect(page.getByTestId('phase-duration-intake')).toHaveText(/^(\d+ ms|\d+\.\d s)$/);
  const [, stored, storedUnit] = /([\d.]+) (ms|s)$/.exec(
    (await page.getByTestId('phase-duration-intake').textContent())!,
  )!;
  expect(Number(stored) * (storedUnit === 's' ? 1000 : 1)).toBeGreaterThanOrEqual(440);
  await expect(page.getByTestId('phase-tokens-intake')).toHaveText(/^~?\d+ tok$/);
  await expect(page.getByTestId('phase-figures-output')).toHaveCount(0);
});

test('a gate reached while the studio is in the background raises a notification and marks the title', async ({
  page,
  context,
}) => {
  await context.grantPermissions(['notifications']);
  // Watches the real Notification API: each notification the page raises is kept, to be read and clicked.
  await page.addInitScript(() => {
    const Real = window.Notification;
    const raised: Notification[] = [];
    Object.assign(window, { __raised: raised });
    window.Notification = class extends Real {
      constructor(title: string, options?: NotificationOptions) {
        super(title, options);
        raised.push(this);
      }
    } as typeof Notification;
  });
  await openStudio(page);
  await script(
    Array.from({ length: 15 }, (_, i) => `n${i} `),
    60,
  );
  await startRun(page, 'Review while I read something else');
  await expect(page.getByTestId('transcript-intake')).toContainText('n1');

  // Another tab comes to the front: the studio is in the background when the run reaches its gate. (Playwright
  // lets every page think it has focus unless told otherwise.)
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false });
  const other = await context.newPage();
  await other.goto('about:blank');
  await other.bringToFront();
  await expect
    .poll(() => page.evaluate(() => document.visibilityState === 'hidden' || !document.hasFocus()))
    .toBe(true);
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { __raised: Notification[] }).__raised.length), {
      timeout: 20_000,
    })
    .toBe(1);
  const raised = await page.evaluate(() => {
    const n = (window as unknown as { __raised: Notification[] }).__raised[0]!;
    return { title: n.title, body: n.body };
  });
  expect(raised).toEqual({
    title: 'Approval waiting',
    body: 'change-review stopped at gate: Publish this review to the author?',
  });
  await expectTitleCounts(page, 'Review while I read something else', 'waiting_approval');
  await expect(page.getByTestId('run-announcer')).toHaveText(
    'Approval waiting at gate: Publish this review to the author?',
  );

  // Meanwhile the studio shows something else; clicking the notification brings back that thread's approval card.
  await page.bringToFront();
  await page.getByTestId('asset-repo-summary').click();
  await expect(page.getByTestId('approval-card')).toBeHidden();
  await page.evaluate(() =>
    (window as unknown as { __raised: Notification[] }).__raised[0]!.dispatchEvent(new Event('click')),
  );
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('approval-card')).toContainText('Publish this review to the author?');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_waiting');
  await page.screenshot({ path: shot('output-approval-notification') });

  // Deciding clears the mark in the title.
  await script(['Done.']);
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expectTitleCounts(page, 'Review while I read something else', 'completed');
  await other.close();
});

test('no notification while the studio is the focused window; the title still counts the approval; the gate context reads as markdown', async ({
  page,
  context,
}) => {
  await context.grantPermissions(['notifications']);
  await page.addInitScript(() => {
    const Real = window.Notification;
    const raised: string[] = [];
    Object.assign(window, { __raised: raised });
    window.Notification = class extends Real {
      constructor(title: string, options?: NotificationOptions) {
        super(title, options);
        raised.push(title);
      }
    } as typeof Notification;
  });
  await openStudio(page);
  await script(pieces('## Risk\n\n- **low**: one rename\n'));
  await startRun(page, 'Review in front of me');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  // What the approver reads is rendered markdown too.
  await expect(page.getByTestId('gate-context-analysis').locator('h2')).toHaveText('Risk');
  await expect(page.getByTestId('gate-context-analysis').locator('li strong')).toHaveText('low');
  await expectTitleCounts(page, 'Review in front of me', 'waiting_approval');
  expect(await page.evaluate(() => (window as unknown as { __raised: string[] }).__raised)).toEqual([]);
  await page.getByTestId('gate-reject').click();
  // Rejecting ends the run for good: the card asks once more.
  await page.getByTestId('gate-reject-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('✕ Run rejected');
  await expectTitleCounts(page, 'Review in front of me', 'rejected');
});

test('in the desktop app the gate notification goes through the preload bridge, and its click opens the approval', async ({
  page,
  context,
}) => {
  // A stand-in for the preload's bridge: it records each notification and answers that it was clicked once the test
  // says so. The browser's own Notification must not be used inside the app. Like the app, it reports the per-launch
  // token the window was opened on.
  await page.addInitScript((apiToken) => {
    const shown: { title: string; body: string }[] = [];
    let click: (outcome: 'clicked') => void = () => undefined;
    const pending = () => new Promise(() => undefined);
    const desktop = {
      showNotification: (n: { title: string; body: string }) => {
        shown.push(n);
        return new Promise((resolve) => (click = resolve));
      },
      appInfo: async () => ({ version: 'test', apiUrl: location.origin, apiToken, serverError: null }),
    };
    Object.assign(window, { __shown: shown, __click: () => click('clicked') });
    Object.defineProperty(window, 'desktop', {
      value: new Proxy(desktop, {
        get: (target, key) => (key in target ? target[key as keyof typeof desktop] : pending),
      }),
    });
    window.Notification = class {
      constructor() {
        throw new Error('the browser notification was used inside the desktop app');
      }
    } as unknown as typeof Notification;
  }, token());
  await openStudio(page);
  await script(
    Array.from({ length: 10 }, (_, i) => `d${i} `),
    60,
  );
  await startRun(page, 'Review in the desktop app');
  await expect(page.getByTestId('transcript-intake')).toContainText('d1');
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false });
  const other = await context.newPage();
  await other.bringToFront();
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { __shown: unknown[] }).__shown), { timeout: 20_000 })
    .toEqual([
      { title: 'Approval waiting', body: 'change-review stopped at gate: Publish this review to the author?' },
    ]);
  await page.bringToFront();
  await page.getByTestId('asset-repo-summary').click();
  await expect(page.getByTestId('approval-card')).toBeHidden();
  await page.evaluate(() => (window as unknown as { __click(): void }).__click());
  await expect(page.getByTestId('approval-card')).toContainText('Publish this review to the author?');
  await other.close();
});
