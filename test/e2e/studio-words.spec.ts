import { randomUUID } from 'node:crypto';
import type { Locator } from '@playwright/test';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { api, expect, openStudio, screenshotPath, script, startRun, test, words } from './studio.fixtures';

/**
 * People's words on screen: who decided says what they are, not a login name; runs are named by a short id (the whole
 * one in a title, a data attribute and a copy button); and every date and time is said one way, relative to now with
 * the full date and time in its title (src-renderer/src/clock/time-format.ts), in every part of the studio.
 */

/** The absolute format as Chromium writes it in English ("Wed, Mar 4, 2026, 14:02:05"), and a zone when named. */
const ABSOLUTE = /^[A-Z][a-z]{2}, [A-Z][a-z]{2} \d{1,2}, \d{4}, \d{2}:\d{2}:\d{2}( [A-Z]+[+-]?\d*)?$/;
const RECENT = /^(just now|\d+ min ago)$/;

/** Every `<time>` in `scope`, once one is shown: its text and its title. */
const timesIn = async (scope: Locator) => {
  await expect(scope.locator('time').first()).toBeVisible();
  return scope
    .locator('time')
    .evaluateAll((all) => all.map((t) => ({ text: t.textContent!.trim(), title: t.getAttribute('title') ?? '' })));
};

test('a decision taken with the API token says so in words; a run shows its short id, the whole one a copy away', async ({
  page,
}) => {
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  const marker = randomUUID().slice(0, 8);
  await openStudio(page);
  await script(words(`A small change ${marker}.`));
  await startRun(page, `Review: in words ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await script(words('Published.'));
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');

  await expect(page.getByTestId('transcript-decision').getByTestId('decision-summary')).toHaveText(
    'Approve publishing · Approved by the API token',
  );
  const runId = (await page.getByTestId('run-id').getAttribute('data-id'))!;
  expect(runId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  await expect(page.getByTestId('run-id')).toHaveText(runId.slice(0, 8));
  await expect(page.getByTestId('run-id').getByTitle(`run ${runId}`)).toBeVisible();

  // Nowhere is the whole id shown: the status line, the approval tab's record, the State and History tabs.
  for (const tab of ['approval', 'state', 'history']) {
    await page.getByTestId(`tab-${tab}`).click();
    await expect(page.getByTestId(`tab-${tab}`)).toHaveAttribute('aria-selected', 'true');
    expect(await page.locator('body').innerText(), `the ${tab} tab`).not.toContain(runId);
  }
  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-decision')).toContainText('Approved by the API token');

  // The copy button copies the whole id, and says so.
  await page.getByTestId('run-id').getByRole('button', { name: 'Copy the run id' }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(runId);
  await expect(page.getByTestId('toast')).toContainText('The run id is copied');
});

test('one time format: the thread list, a run’s details, the inbox and the schedules say when the same way', async ({
  page,
}) => {
  const marker = randomUUID().slice(0, 8);
  // A run waiting at a gate with a deadline (30 min), in the inbox; and a schedule that has fired once.
  await script(words(`An analysis ${marker}.`));
  const started = await api('/agents/two-person-review/runs', {
    method: 'POST',
    json: { message: `Review: times ${marker}` },
  });
  const { run_id: runId } = (await started.json()) as { run_id: string };
  await expect
    .poll(async () => ((await (await api(`/runs/${runId}`)).json()) as { status: string }).status)
    .toBe('waiting_approval');
  const made = await api(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
    method: 'POST',
    json: { agent: 'repo-summary', cron: '0 9 * * 1-5', timezone: 'Asia/Tokyo', message: `Summary ${marker}` },
  });
  const schedule = (await made.json()) as { id: string };
  await script(words('Summed up.'));
  expect((await api(`/schedules/${schedule.id}/run`, { method: 'POST' })).status).toBeLessThan(300);

  try {
    await page.setViewportSize({ width: 1440, height: 900 });
    await openStudio(page, 'two-person-review');

    // The thread list.
    const row = page.getByTestId('thread-row').filter({ hasText: `times ${marker}` });
    const listed = await timesIn(row);
    expect(listed).toHaveLength(1);
    expect(listed[0]!.text).toMatch(RECENT);
    expect(listed[0]!.title).toMatch(ABSOLUTE);

    // A run's details: when it started.
    await row.getByTestId('thread-item').click();
    await expect(page.getByTestId('approval-card')).toBeVisible();
    await page.getByTestId('tab-state').click();
    const [startedAt] = await timesIn(page.getByTestId('state-started'));
    expect(startedAt!.text).toMatch(RECENT);
    expect(startedAt!.title).toMatch(ABSOLUTE);

    // The inbox: how long it has waited, and when its deadline falls, each with the moment in full.
    await page.getByTestId('inbox-open').click();
    const item = page.getByTestId('inbox-item').filter({ hasText: `times ${marker}` });
    await expect(item.getByTestId('inbox-deadline')).toHaveText(
      /^Expires in (29|30) min: then it is rejected and the run ends\.$/,
    );
    const inbox = await timesIn(item);
    expect(inbox.map((t) => t.text)).toEqual([
      expect.stringMatching(/^waiting \d+ s$/),
      expect.stringMatching(/^in (29|30) min$/),
    ]);
    for (const time of inbox) expect(time.title).toMatch(ABSOLUTE);
    await page.screenshot({ path: screenshotPath('words-inbox-times') });
    await page.getByTestId('inbox-close').click();

    // The schedules: its last fire relative to now; the times it fires, which a person checks against its cron, in
    // the same absolute format, in its own zone.
    await page.getByTestId('schedules-open').click();
    const scheduled = page.getByTestId('schedule-item').filter({ hasText: `Summary ${marker}` });
    await expect(scheduled.getByTestId('schedule-last')).toContainText('started');
    const [last] = await timesIn(scheduled.getByTestId('schedule-last'));
    expect(last!.text).toMatch(RECENT);
    expect(last!.title).toMatch(ABSOLUTE);
    const next = await timesIn(scheduled.getByTestId('schedule-next'));
    expect(next).toHaveLength(3);
    for (const time of next) {
      expect(time.text).toMatch(ABSOLUTE);
      expect(time.text).toMatch(/09:00:00 GMT\+9$/);
      expect(time.title).toBe(time.text);
    }
    await page.screenshot({ path: screenshotPath('words-schedule-times') });
  } finally {
    await api(`/runs/${runId}/cancel`, { method: 'POST', json: {} });
    await api(`/schedules/${schedule.id}`, { method: 'DELETE' });
  }
});
