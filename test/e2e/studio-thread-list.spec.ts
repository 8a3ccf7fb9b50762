import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Locator, Page } from '@playwright/test';
import { numberedTokens } from '../fixtures/fake-models';
import { api, expect, openStudio, screenshotPath, script, startRun, test, words } from './studio.fixtures';

/**
 * The thread list tells the truth without a reload: a run started appears in it while it streams, and its row
 * changes within a second of what the studio sees (the run ending, a decision from the inbox, a cancel), as does the
 * inbox's count. Threads keep their names (a continue and a fork do not rename them), can be renamed, and a rerun's
 * row says it is one.
 */

const SOON = { timeout: 1000 };
const row = (page: Page, text: string): Locator => page.getByTestId('thread-row').filter({ hasText: text });
const inboxCount = async (page: Page) => Number(await page.getByTestId('inbox-count').textContent());

test('a streaming run is listed at once, and its row says when it completes', async ({ page }) => {
  const marker = randomUUID().slice(0, 8);
  await openStudio(page, 'repo-summary');
  await script(numberedTokens(40, 'w'), 50);
  await startRun(page, `Summarise the loader ${marker}`);
  await expect(page.getByTestId('transcript-dispatch')).toContainText('w3');
  // Still streaming: the thread is listed, as running.
  await expect(row(page, marker)).toHaveAttribute('data-status', 'running', SOON);
  await expect(row(page, marker).getByTestId('thread-status')).toHaveText('Running');
  await page.screenshot({ path: screenshotPath('thread-list-streaming') });
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(row(page, marker)).toHaveAttribute('data-status', 'completed', SOON);
  await expect(row(page, marker).getByTestId('thread-status')).toHaveText('Completed');
});

test('an approval from the inbox and a cancel change the row and the inbox count within a second', async ({ page }) => {
  const marker = randomUUID().slice(0, 8);
  await openStudio(page);

  // Two runs wait at their gates; the second is on screen.
  await script(words(`Analysis ${marker}: first.`));
  await startRun(page, `Review: inbox approval ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await script(words(`Analysis ${marker}: second.`));
  await startRun(page, `Review: cancelled ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  const first = row(page, `inbox approval ${marker}`);
  const second = row(page, `cancelled ${marker}`);
  await expect(first).toHaveAttribute('data-status', 'waiting_approval');
  await expect(first.getByTestId('thread-status')).toHaveText('Waiting for approval');
  await expect(second).toHaveAttribute('data-status', 'waiting_approval');

  // The first is approved from the inbox, away from its thread: its row moves on, and the count goes down.
  await expect(page.getByTestId('inbox-count')).toHaveText(/^[1-9]\d*$/);
  await page.getByTestId('inbox-open').click();
  const item = page.getByTestId('inbox-item').filter({ hasText: `inbox approval ${marker}` });
  await expect(item).toBeVisible();
  const before = await inboxCount(page);
  // The card and the inbox say the same: where the gate is, which phase a respond sends back, what each field is for.
  await expect(item).toContainText('Approval at “Approve publishing” · members and above decide');
  await item.getByTestId('gate-respond').click();
  await expect(item.getByTestId('gate-respond-submit')).toHaveText('Send back to analysis');
  await expect(item.getByTestId('gate-response-hint')).toContainText('analysis reads this and runs again');
  await expect(item.getByTestId('gate-reason-hint')).toContainText('The phase does not read it');
  const axe = await new AxeBuilder({ page })
    .include('[data-testid="inbox"]')
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
  await item.getByTestId('gate-respond-cancel').click();
  await script(words('Published.'));
  await item.getByTestId('gate-approve').click();
  // The confirmation names the run: its agent and its thread.
  await expect(page.getByTestId('inbox-notice')).toContainText(`change-review · “Review: inbox approval ${marker}”`);
  await expect(first).not.toHaveAttribute('data-status', 'waiting_approval', SOON);
  await expect(page.getByTestId('inbox-count')).toHaveText(String(before - 1), SOON);
  // It finishes in the background: the row says so without a reload.
  await expect(first).toHaveAttribute('data-status', 'completed');
  await page.getByTestId('inbox-close').click();
  await expect(page.getByTestId('approval-card')).toContainText(
    'Approval at “Approve publishing” · members and above decide',
  );
  await page.getByTestId('gate-respond').click();
  await expect(page.getByTestId('gate-respond-submit')).toHaveText('Send back to analysis');
  await page.getByTestId('gate-respond-cancel').click();

  // The second is cancelled from its thread: its row, and the count, at once.
  await page.getByTestId('run-cancel').click();
  await expect(page.getByTestId('run-status')).toContainText('Run cancelled');
  await expect(second).toHaveAttribute('data-status', 'cancelled', SOON);
  await expect(second.getByTestId('thread-status')).toHaveText('Cancelled');
  await expect(page.getByTestId('inbox-count')).toHaveText(String(before - 2), SOON);
  await page.screenshot({ path: screenshotPath('thread-list-after-cancel') });
});

test('a thread keeps its name after a continue and a fork; a rename sticks; a rerun says it is one', async ({
  page,
}) => {
  const marker = randomUUID().slice(0, 8);
  const name = `Summarise the cache layer ${marker}`;
  await openStudio(page, 'repo-summary');
  await script(words('A first summary.'));
  await startRun(page, name);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  const thread = page.getByTestId('thread-row').filter({ hasText: marker });
  await expect(thread.getByTestId('thread-name')).toHaveText(name);

  // A continue on the same thread.
  await script(words('A second summary.'));
  await page.getByTestId('run-message').fill('and now the tests');
  await page.getByTestId('run-continue-thread').check();
  await page.getByTestId('run-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(thread).toHaveCount(1);
  await expect(thread.getByTestId('thread-name')).toHaveText(name);

  // A fork from the history.
  await page.getByTestId('tab-history').click();
  await page.getByTestId('history-checkpoint').first().click();
  await page.getByTestId('fork-open').click();
  await page.getByTestId('fork-message').fill('a forked question');
  await script(words('A forked summary.'));
  await page.getByTestId('fork-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('run-forked-from')).toContainText('Forked from run');
  // Its marks are drawn, not taken from a font that may lack them (Debian's draws "⑂" and "⧉" as empty boxes).
  await expect(page.getByTestId('run-forked-from').locator('svg[data-icon="fork"]')).toBeVisible();
  await expect(
    page.getByTestId('run-forked-from').getByTestId('copy-id').locator('svg[data-icon="copy"]'),
  ).toBeVisible();
  expect(await page.getByTestId('run-status').textContent()).not.toMatch(/[⑂⧉]/);
  await expect(thread.getByTestId('thread-name')).toHaveText(name);

  // Renaming: Escape leaves the name, Enter keeps the new one, and it is stored.
  await thread.hover();
  await thread.getByRole('button', { name: `Rename thread ${name}` }).click();
  const field = page.getByRole('textbox', { name: 'Thread name' });
  await expect(field).toHaveValue(name);
  await field.fill('not this one');
  await field.press('Escape');
  await expect(thread.getByTestId('thread-name')).toHaveText(name);
  await thread.getByRole('button', { name: `Rename thread ${name}` }).click();
  await field.fill(`Cache layer ${marker}`);
  await field.press('Enter');
  await expect(thread.getByTestId('thread-name')).toHaveText(`Cache layer ${marker}`);
  const threadId = await thread.getAttribute('data-thread-id');
  await expect
    .poll(async () => ((await (await api(`/threads/${threadId}`)).json()) as { name: string }).name)
    .toBe(`Cache layer ${marker}`);

  // A rerun is a new thread, named after this one and saying it is a rerun.
  await script(words('A rerun summary.'));
  await page.getByTestId('run-rerun').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('thread-row').filter({ hasText: marker })).toHaveCount(2);
  await expect(page.getByTestId('thread-name').filter({ hasText: marker })).toHaveText([
    `Cache layer ${marker} (rerun)`,
    `Cache layer ${marker}`,
  ]);
  // However narrow the list, the rerun says it is one where its name is cut short.
  await expect(row(page, marker).first().getByTestId('thread-rerun')).toHaveText('Rerun');
  await expect(row(page, marker).nth(1).getByTestId('thread-rerun')).toHaveCount(0);
  await page.screenshot({ path: screenshotPath('thread-list-names') });

  // The list after a reload says the same.
  await page.reload();
  await expect(page.getByTestId('thread-name').filter({ hasText: marker })).toHaveText([
    `Cache layer ${marker} (rerun)`,
    `Cache layer ${marker}`,
  ]);

  // WCAG 2.1 AA on the thread list (this spec's view; the canvas has its own checks), with a rename under way.
  await page.getByTestId('thread-row').filter({ hasText: marker }).first().hover();
  await page.getByRole('button', { name: `Rename thread Cache layer ${marker} (rerun)` }).click();
  await expect(page.getByRole('textbox', { name: 'Thread name' })).toBeFocused();
  const { violations } = await new AxeBuilder({ page })
    .include('nav')
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  expect(violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
});

test('an organisation and project made after the studio loaded are offered when the person reaches for the switcher', async ({
  page,
}) => {
  await openStudio(page);
  const orgPicker = page.getByTestId('scope-org');
  await expect(orgPicker).toBeVisible();
  const suffix = randomUUID().slice(0, 6);
  const made = async (path: string, json: object) => {
    const res = await api(path, { method: 'POST', json });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  };
  // Made in an organisation of its own: the default one, which other tests use, keeps its single project.
  const org = await made('/orgs', { name: `Made after loading ${suffix}` });
  const team = await made('/teams', { name: 'Team', parent_id: org });
  await made('/projects', { name: `Project ${suffix}`, parent_id: team });
  await expect(orgPicker.locator('option', { hasText: suffix })).toHaveCount(0);

  await orgPicker.focus();
  await expect(orgPicker.locator('option', { hasText: suffix })).toHaveCount(1);
  await orgPicker.selectOption(org);
  await expect(page.getByTestId('scope-project').locator('option', { hasText: `Project ${suffix}` })).toHaveCount(1);
});

test('a thread whose run waits at a gate reads as waiting for approval with a run queued behind it', async ({
  page,
}) => {
  const marker = randomUUID().slice(0, 8);
  await openStudio(page);
  await script(words(`Analysis ${marker}.`));
  await startRun(page, `Review: queued behind ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  const thread = row(page, marker);
  await expect(thread).toHaveAttribute('data-status', 'waiting_approval');
  const threadId = await thread.getAttribute('data-thread-id');

  // Another message for the thread, queued behind the run that waits (from a script, say).
  const queued = await api('/agents/change-review/runs', {
    method: 'POST',
    json: { message: `and then ${marker}`, thread_id: threadId, multitask_strategy: 'enqueue' },
  });
  expect(queued.status).toBe(202);
  const queuedRun = (await queued.json()) as { run_id: string; status: string };
  expect(queuedRun.status).toBe('queued');

  // The list read again (its poll, then a reload) still shows the gate, not the queue.
  await page.reload();
  await expect(thread).toHaveAttribute('data-status', 'waiting_approval');
  await expect(thread.getByTestId('thread-status')).toHaveText('Waiting for approval');
  await page.screenshot({ path: screenshotPath('thread-list-waiting-with-queued') });
  const listed = (await (await api(`/threads/${threadId}`)).json()) as { last_run: { id: string; status: string } };
  expect(listed.last_run.status).toBe('waiting_approval');
  expect(listed.last_run.id).not.toBe(queuedRun.run_id);
  // Neither is left waiting for the tests after.
  for (const runId of [queuedRun.run_id, listed.last_run.id]) {
    expect((await api(`/runs/${runId}/cancel`, { method: 'POST', json: {} })).status).toBeLessThan(300);
  }
});
