import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Locator, Page, Request } from '@playwright/test';
import { expect, failModel, openStudio, screenshotPath, script, sql, startRun, test, words } from './studio.fixtures';

/**
 * The search above the thread list: the server finds the threads (words of their runs' messages and outputs, of
 * their names), the list shows them as it shows any thread, filters (status, agent, started by me, last active)
 * combine with the words, Escape clears, paging through a search shows each thread once, and it meets WCAG 2.1 AA.
 */

/** The default project, where the studio's runs go (as studio.spec.ts inserts its threads). */
const DEFAULT_PROJECT = '00000000-0000-4000-8000-000000000003';
/** The API token's caller, whom the specs' studio signs in as. */
const API_TOKEN_USER = '00000000-0000-0000-0000-000000000001';

/** A word of letters only, new to the shared database: the full-text parser keeps it whole. */
const uniqueWord = () =>
  Array.from({ length: 10 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('');

const rows = (page: Page): Locator => page.getByTestId('thread-row');
const row = (page: Page, text: string): Locator => rows(page).filter({ hasText: text });
const field = (page: Page): Locator => page.getByRole('searchbox', { name: 'Search threads' });
const search = (page: Page): Locator => page.getByTestId('thread-search');
const summary = (page: Page): Locator => page.getByTestId('thread-search-status');

/** The reads of the list the studio sent: each `GET /threads` with its query (the searches and the list's own). */
function listReads(page: Page): URLSearchParams[] {
  const reads: URLSearchParams[] = [];
  page.on('request', (request: Request) => {
    const url = new URL(request.url());
    if (request.method() === 'GET' && url.pathname.endsWith('/threads')) reads.push(url.searchParams);
  });
  return reads;
}

async function expectNoViolations(page: Page): Promise<void> {
  const { violations } = await new AxeBuilder({ page })
    .include('nav')
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  expect(violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
}

test('words of one output list only its thread, the status filter combines with them, and Escape clears', async ({
  page,
}) => {
  const tag = uniqueWord();
  const kiwi = `kiwi${tag}`;
  const mango = `mango${tag}`;
  const reads = listReads(page);
  const lastSearch = () => reads.filter((query) => query.has('q')).at(-1);
  await openStudio(page, 'repo-summary');

  // Three threads: two whose outputs have a word of their own, one that failed.
  await script(words(`Found ${kiwi} in the loader.`));
  await startRun(page, `Search spec ${tag}: the loader`);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await script(words(`Found ${mango} in the cache.`));
  await startRun(page, `Search spec ${tag}: the cache`);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await failModel(500, 'model crashed: out of memory');
  await startRun(page, `Search spec ${tag}: the queue`);
  await expect(page.getByTestId('run-status')).toContainText('✕ Run failed');
  await script(['ok']);
  const loader = row(page, `${tag}: the loader`);
  const cache = row(page, `${tag}: the cache`);
  const queue = row(page, `${tag}: the queue`);
  await expect(row(page, `Search spec ${tag}`)).toHaveCount(3);
  // The whole list: these three, and the other specs' threads (the database is shared).
  const whole = await rows(page).count();

  // A word of the first output, typed: after the pause the server is asked once for the word (not a key at a time),
  // and only that thread is listed, as any thread is, with its status said politely.
  await expect(summary(page)).toHaveAttribute('role', 'status');
  await expect(summary(page)).toHaveText('');
  const before = reads.length;
  await field(page).pressSequentially(kiwi, { delay: 15 });
  await expect(rows(page)).toHaveCount(1);
  await expect(loader).toBeVisible();
  await expect(loader.getByTestId('thread-status')).toHaveText('Completed');
  await expect(loader.getByTestId('thread-name')).toHaveText(`Search spec ${tag}: the loader`);
  await expect(summary(page)).toHaveText('1 thread matches');
  const searched = reads.slice(before).map((query) => query.get('q'));
  expect(searched.at(-1)).toBe(kiwi);
  expect(searched.length).toBeLessThan(kiwi.length / 2);
  await field(page).fill(mango);
  await expect(cache).toBeVisible();
  await expect(rows(page)).toHaveCount(1);

  // The word they share, then with the status filter: the completed two, then the failed one.
  await field(page).fill(tag);
  await expect(rows(page)).toHaveCount(3);
  await expect(summary(page)).toHaveText('3 threads match');
  const toggle = search(page).getByTestId('thread-filters-toggle');
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  const status = search(page).getByRole('combobox', { name: 'Status' });
  await status.selectOption({ label: 'Completed' });
  await expect(rows(page)).toHaveCount(2);
  await expect(loader).toBeVisible();
  await expect(cache).toBeVisible();
  await expect(summary(page)).toHaveText('2 threads match');
  await expect(toggle).toHaveText('Filters (1)');
  await status.selectOption({ label: 'Failed' });
  await expect(rows(page)).toHaveCount(1);
  await expect(queue).toBeVisible();
  expect(lastSearch()?.get('status')).toBe('error');
  expect(lastSearch()?.get('q')).toBe(tag);

  // Another agent, and started by me (the API token, who started these).
  const agent = search(page).getByRole('combobox', { name: 'Agent' });
  await status.selectOption({ label: 'Any' });
  await agent.selectOption('change-review');
  await expect(summary(page)).toHaveText(`No threads match “${tag}” with these filters.`);
  await expect(rows(page)).toHaveCount(0);
  await agent.selectOption('repo-summary');
  await expect(rows(page)).toHaveCount(3);
  await search(page).getByRole('checkbox', { name: 'Started by me' }).check();
  await expect.poll(() => lastSearch()?.get('started_by')).toBe(API_TOKEN_USER);
  await expect(summary(page)).toHaveText('3 threads match');
  await expect(rows(page)).toHaveCount(3);
  await search(page).getByRole('button', { name: 'Clear filters' }).click();
  await expect(toggle).toHaveText('Filters');
  await expect(field(page)).toHaveValue(tag);

  // A word of one output and a status its thread is not in: nothing matches, and the list says so.
  await status.selectOption({ label: 'Failed' });
  await field(page).fill(kiwi);
  await expect(summary(page)).toHaveText(`No threads match “${kiwi}” with these filters.`);
  await expect(rows(page)).toHaveCount(0);
  await page.screenshot({ path: screenshotPath('thread-search-none') });

  // With a search shown (results and filters open): WCAG 2.1 AA on the list.
  await field(page).fill(tag);
  await expect(queue).toBeVisible();
  await expectNoViolations(page);
  await page.screenshot({ path: screenshotPath('thread-search') });

  // Escape empties the words (the filter stays: the failed threads), a second one the filters: the whole list.
  await field(page).press('Escape');
  await expect(field(page)).toHaveValue('');
  await expect(status).toHaveValue('error');
  await expect(queue).toBeVisible();
  await expect(loader).toHaveCount(0);
  await field(page).press('Escape');
  await expect(status).toHaveValue('');
  await expect(summary(page)).toHaveText('');
  await expect(row(page, `Search spec ${tag}`)).toHaveCount(3);
  await expect(rows(page)).toHaveCount(whole);
  await expect(field(page)).toBeFocused();
});

test('a search of several pages lists each thread once, and last active leaves out older threads', async ({ page }) => {
  const tag = uniqueWord();
  const pager = `pager${tag}`;
  const relic = `relic${tag}`;
  const ids = Array.from({ length: 55 }, () => randomUUID());
  const old = randomUUID();
  await sql(
    `INSERT INTO svc_threads (id, agent, model, name, project_id, updated_at)
       SELECT id, 'repo-summary', 'fake-model', 'Paged ' || $2 || ' ' || n, $3, now() - n * interval '1 minute'
         FROM unnest($1::uuid[]) WITH ORDINALITY AS listed(id, n)`,
    [ids, pager, DEFAULT_PROJECT],
  );
  await sql(
    `INSERT INTO svc_threads (id, agent, model, name, project_id, updated_at)
       VALUES ($1, 'repo-summary', 'fake-model', $2, $3, now() - interval '10 days')`,
    [old, `An old thread ${relic}`, DEFAULT_PROJECT],
  );
  try {
    await openStudio(page, 'repo-summary');
    await field(page).fill(pager);
    await expect(rows(page)).toHaveCount(50);
    await expect(summary(page)).toHaveText('50+ threads match');

    // A thread of the first page is active again while the list is paged: the server may list it once more (or the
    // list's own poll re-reads the first page meanwhile); either way each thread is shown once.
    await sql(`UPDATE svc_threads SET updated_at = now() WHERE id = $1`, [ids[0]]);
    await page.getByTestId('threads-more').click();
    await expect(summary(page)).toHaveText('55 threads match');
    const listed = await rows(page).evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.threadId));
    expect(listed).toHaveLength(55);
    expect(new Set(listed)).toEqual(new Set(ids));
    await expect(page.getByTestId('threads-more')).toHaveCount(0);

    // Last active: a thread idle for ten days is in the last 30 days, not the last 7.
    await field(page).fill(relic);
    await expect(rows(page)).toHaveCount(1);
    await search(page).getByTestId('thread-filters-toggle').click();
    const since = search(page).getByRole('combobox', { name: 'Last active' });
    await since.selectOption({ label: 'Last 7 days' });
    await expect(summary(page)).toHaveText(`No threads match “${relic}” with these filters.`);
    await since.selectOption({ label: 'Last 30 days' });
    await expect(rows(page)).toHaveCount(1);
    await expect(row(page, relic).getByTestId('thread-status')).toHaveText('No runs yet');
  } finally {
    await sql(`DELETE FROM svc_threads WHERE id = ANY($1::uuid[])`, [[...ids, old]]);
  }
});
