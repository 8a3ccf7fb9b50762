import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import {
  baseUrl,
  expect,
  fromHeader,
  openStudio,
  screenshotPath,
  script,
  scriptToolTurns,
  startRun,
  test,
  token,
  words,
} from './studio.fixtures';

/**
 * The studio and the portal against WCAG 2.1 A and AA, as axe-core checks them in Chromium, on the screens a person
 * works in. Both have one colour scheme (light): neither styles `prefers-color-scheme: dark`.
 */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/** Each violation as one line (rule, element, axe's summary), so that a failure says what to fix and where. */
async function violations(page: Page): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page }).withTags(WCAG_21_AA).analyze();
  return found.flatMap((v) =>
    v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary?.replace(/\s+/g, ' ') ?? ''}`),
  );
}

/** Checks the screen as it is now and keeps a picture of it; every screen is checked even when one fails. */
async function check(page: Page, screen: string): Promise<void> {
  expect.soft(await violations(page), `violations on ${screen}`).toEqual([]);
  await page.screenshot({ path: screenshotPath(`a11y-${screen}`) });
}

test('the studio meets WCAG 2.1 AA: the link question, empty, at a gate, the inbox, the models, the usage, the agents, the History tab, finished, a thread search, a new project', async ({
  page,
}) => {
  // Eleven screens, each a whole-page axe pass of a few seconds: more than the default minute on a busy machine.
  test.setTimeout(120_000);
  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.goto(`${baseUrl()}/ui#token=${token()}`);
  await expect(page.getByTestId('link-sign-in')).toBeVisible();
  await check(page, 'link-question');
  await page.getByTestId('link-sign-in-switch').click();

  await openStudio(page);
  await check(page, 'empty');

  await script(words('The rename is safe to ship; one nit in the loader.'));
  await startRun(page, 'Review: the rename of the config loader');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await check(page, 'gate');

  await page.getByTestId('inbox-open').click();
  await expect(page.getByTestId('inbox-item').first()).toBeVisible();
  await check(page, 'inbox');
  await page.getByTestId('inbox-close').click();

  await page.getByTestId('models-open').click();
  await expect(page.getByTestId('models-table')).toBeVisible();
  await check(page, 'models');
  await page.getByTestId('models-close').click();

  await page.getByTestId('usage-open').click();
  await expect(page.getByTestId('usage-table')).toBeVisible();
  await check(page, 'usage');
  await page.getByTestId('usage-close').click();

  await fromHeader(page, 'audit-open');
  await expect(page.getByTestId('audit-table')).toBeVisible();
  await check(page, 'audit');
  await page.getByTestId('audit-close').click();

  // The Agents view with a built-in open in the editor: its source, its graph and the Try form.
  await page.getByTestId('agents-open').click();
  await page.getByTestId('agent-open-change-review').click();
  await expect(page.getByTestId('source-valid')).toBeVisible();
  await check(page, 'agents');
  await page.getByTestId('agents-close').click();

  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-checkpoint').first()).toBeVisible();
  await check(page, 'history');

  // Approved and finished: the completed phases, the passed gate, the run's status and the decision on record.
  await script(words('Published.'));
  await page.getByTestId('tab-approval').click();
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-decision')).toBeVisible();
  await check(page, 'finished');

  // The thread list with a search: its results, the filters open, how many match said.
  const threadSearch = page.getByRole('searchbox', { name: 'Search threads' });
  await threadSearch.fill('config loader');
  await page.getByTestId('thread-filters-toggle').click();
  await expect(page.getByTestId('thread-search-status')).toHaveText(/match/);
  await check(page, 'thread-search');
  await threadSearch.press('Escape');

  // The scope switcher's New project… form, with a missing name said beside its field.
  await page.getByTestId('project-new').click();
  await expect(page.getByTestId('new-project')).toBeVisible();
  await page.getByTestId('new-project-create').click();
  await expect(page.getByTestId('new-project-error')).not.toBeEmpty();
  await check(page, 'new-project');
  await page.keyboard.press('Escape');
});

test("a tool server's question meets WCAG 2.1 AA: in the run, and in the inbox with a field to fix", async ({
  page,
}) => {
  const marker = `a11y-ask-${Date.now()}`;
  await page.setViewportSize({ width: 1600, height: 1000 });
  await openStudio(page, 'question-review');
  // The asking server's form (test/fixtures/mcp-asking-server.ts): a name, required, and a count.
  await scriptToolTurns([[{ name: 'asker__ask_release', arguments: {} }]]);
  await script(words('Noted.'));
  await startRun(page, `Name the release ${marker}`);
  await expect(page.getByTestId('run-question').getByTestId('question-form')).toBeVisible();
  await check(page, 'question-run');

  await page.getByTestId('inbox-open').click();
  const item = page.locator('[data-testid="inbox-item"][data-kind="question"]').filter({ hasText: marker });
  await item.getByTestId('question-send').click();
  await expect(item.getByTestId('question-problem-name')).toBeVisible();
  await check(page, 'question-inbox');
  // Declined: it waits no more, and the run goes on to its gate.
  await item.getByTestId('question-decline').click();
  await expect(item).toHaveCount(0);
});

test('the portal meets WCAG 2.1 AA', async ({ page }) => {
  await page.goto(`${baseUrl()}/`);
  await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
  expect(await violations(page)).toEqual([]);
  await page.screenshot({ path: screenshotPath('a11y-portal'), fullPage: true });
});

/**
 * A review as a model writes one, a few thousand characters: paragraphs, a list and a code block wider than any pane.
 * Short fixture outputs never overflow the boxes that show them; this one does, as real ones do.
 */
function longReview(marker: string): string {
  const paragraph = (n: number) =>
    `Paragraph ${n} of the review ${marker}: the storage layer keeps its writes in one transaction per batch, ` +
    'retries what the database refuses while it restarts, and never reads a run whole into memory; the tests cover ' +
    'the restart, the slow reader and the takeover, and the names say what each part is for.';
  const code = ['```ts', `const wide = '${'x'.repeat(400)}';`, '```'].join('\n');
  return [
    ...Array.from({ length: 8 }, (_, i) => paragraph(i + 1)),
    '- first finding\n- second finding\n- third finding',
    code,
  ].join('\n\n');
}

test('the studio meets WCAG 2.1 AA with outputs of realistic length: the run, an edit, the history, the inbox, usage, schedules and models', async ({
  page,
}) => {
  test.setTimeout(150_000);
  const marker = `long-${Date.now()}`;
  const review = longReview(marker);
  expect(review.length).toBeGreaterThan(2500);
  await page.setViewportSize({ width: 1440, height: 900 });
  await openStudio(page);
  await script(words(review));
  await startRun(page, `Review: the whole storage layer ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await check(page, 'long-gate');

  await page.getByTestId('inbox-open').click();
  const item = page.getByTestId('inbox-item').filter({ hasText: marker });
  await expect(item).toBeVisible();
  await check(page, 'long-inbox');
  // Approved with an edit as long as the review: the decision carries it.
  await item.getByTestId('gate-edit').click();
  await item.getByTestId('gate-edit-text').fill(`EDITED ${review}`);
  await script(words('Published.'));
  await item.getByTestId('gate-edit-submit').click();
  await expect(item).toHaveCount(0);
  await page.getByTestId('inbox-close').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('transcript-decision')).toHaveAttribute('data-decision', 'edit');
  await check(page, 'long-finished');

  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-decision')).toBeVisible();
  await check(page, 'long-history');

  for (const view of ['usage', 'schedules', 'models']) {
    await page.getByTestId(`${view}-open`).click();
    await expect(page.getByTestId(`${view}-view`)).toBeVisible();
    await check(page, `long-${view}`);
    await page.getByTestId(`${view}-close`).click();
  }
});
