import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import { api, expect, openStudio, phase, screenshotPath, script, sql, startRun, test, words } from './studio.fixtures';

/**
 * One history of a run: the studio shows a run from its stored events, folded as they were live, so a run looks
 * the same followed live and opened again after a reload; a run whose events were pruned is shown from its node
 * rows and decisions.
 */

/**
 * What a person sees of the run on screen, read in one go: the status line, the transcript as it reads (outputs,
 * decisions with who decided, their role and when), each phase on the canvas (state, mark, figures), route lines,
 * warnings, and the State tab. Figures that count up while a phase is open (a gate waiting) are left out.
 */
async function seen(page: Page) {
  await page.getByTestId('tab-state').click();
  await expect(page.getByTestId('state-tab')).toBeVisible();
  return page.evaluate(() => {
    const text = (el: Element | null) => (el as HTMLElement | null)?.innerText.replace(/\s+/g, ' ').trim() ?? null;
    const all = (selector: string) => [...document.querySelectorAll(selector)];
    const open = (state: string | null) => state === 'active' || state === 'gate_waiting';
    const phases = all('.phase[data-state]').map((el) => {
      const state = el.getAttribute('data-state');
      return {
        phase: el.getAttribute('data-testid'),
        state,
        mark: text(el.querySelector('[data-testid^="phase-mark-"]')),
        figures: open(state) ? null : text(el.querySelector('[data-testid^="phase-figures-"]')),
      };
    });
    const resting = !phases.some((p) => open(p.state));
    return {
      status: text(document.querySelector('[data-testid="run-status"]')),
      transcript: text(document.querySelector('[data-testid="transcript"]')),
      decisions: all('[data-testid="transcript-decision"]').map(text),
      phases,
      routes: text(document.querySelector('[data-testid="route-lines"]')),
      warnings: all('[data-testid="context-warning"]').map(text),
      state: all('[data-testid="state-tab"] dd')
        .filter((dd) => resting || dd.getAttribute('data-testid') !== 'state-totals')
        .map(text),
    };
  });
}

/** Each phase's state on the canvas, by phase id. */
const states = (shown: Awaited<ReturnType<typeof seen>>) =>
  Object.fromEntries(shown.phases.map((p) => [p.phase!.replace(/^phase-/, ''), p.state]));

/** Opens the thread of `marker` after a reload, as a person coming back to it does. */
async function reopen(page: Page, marker: string): Promise<void> {
  await page.reload();
  await page.getByTestId('thread-item').filter({ hasText: marker }).click();
}

test('a run looks the same followed live and opened again after a reload: sent back at its gate, then approved', async ({
  page,
}) => {
  const marker = `replay-${randomUUID().slice(0, 8)}`;
  await openStudio(page);
  await script(words(`First look ${marker}.`));
  await startRun(page, `Review: ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-respond').click();
  await page.getByTestId('gate-response').fill(`Say more about the tests of ${marker}.`);
  await script(words(`Second look ${marker}, with the tests.`));
  await page.getByTestId('gate-respond-submit').click();
  await expect(page.getByTestId('gate-context-analysis')).toContainText(`Second look ${marker}`);
  // The decision as recorded (who, role, when) once the run rests at the gate again.
  await expect(page.getByTestId('transcript-decision').locator('time')).toHaveCount(1);
  const atTheGate = await seen(page);
  expect(states(atTheGate)).toMatchObject({ intake: 'completed', analysis: 'completed', gate: 'gate_waiting' });
  expect(atTheGate.decisions).toEqual([
    expect.stringMatching(
      /Approve publishing · Sent back to Review by the API token admin (just now|\d+ min ago) FEEDBACK FOR REVIEW Say more/,
    ),
  ]);

  await reopen(page, marker);
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  expect(await seen(page)).toEqual(atTheGate);
  await page.screenshot({ path: screenshotPath('replay-at-the-gate-after-reload') });

  // Decided on the page opened again: the run goes on from where its stored events ended.
  await page.getByTestId('tab-approval').click();
  await page.getByTestId('gate-reason').fill('the tests are covered now');
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('transcript-decision').locator('time')).toHaveCount(2);
  const done = await seen(page);
  expect(states(done)).toMatchObject({
    intake: 'completed',
    analysis: 'completed',
    gate: 'gate_passed',
    output: 'completed',
  });
  expect(done.decisions).toEqual([
    expect.stringMatching(
      /Approve publishing · Sent back to Review by the API token admin (just now|\d+ min ago) FEEDBACK FOR REVIEW Say more/,
    ),
    expect.stringMatching(
      /Approve publishing · Approved by the API token admin (just now|\d+ min ago) “the tests are covered now”$/,
    ),
  ]);
  // The output phase publishes the approved analysis.
  expect(done.transcript).toMatch(new RegExp(`PUBLISH REVIEW .*Second look ${marker}, with the tests\\.`));

  await reopen(page, marker);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  expect(await seen(page)).toEqual(done);
  await page.screenshot({ path: screenshotPath('replay-completed-after-reload') });
});

test('a run whose events were pruned still shows its phases, outputs and decisions, from its node rows', async ({
  page,
}) => {
  const marker = `pruned-${randomUUID().slice(0, 8)}`;
  await openStudio(page);
  await script(words(`An analysis ${marker}.`));
  await startRun(page, `Review: ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-reason').fill('fine as it is');
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('transcript-decision').locator('time')).toHaveCount(1);
  const live = await seen(page);
  const runId = (await page.getByTestId('run-id').getAttribute('data-id'))!;

  // As retention leaves a run that ended long ago: its events gone, its node rows and decisions kept. Its stream
  // then has nothing to replay (204).
  await sql(`UPDATE svc_runs SET finished_at = now() - interval '31 days' WHERE id = $1`, [runId]);
  await sql('DELETE FROM svc_run_events WHERE run_id = $1', [runId]);
  await expect.poll(async () => (await api(`/runs/${runId}/stream`)).status).toBe(204);

  await reopen(page, marker);
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', runId);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(phase(page, 'intake')).toHaveAttribute('data-state', 'completed');
  await expect(phase(page, 'analysis')).toHaveAttribute('data-state', 'completed');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_passed');
  await expect(phase(page, 'output')).toHaveAttribute('data-state', 'completed');
  await expect(page.getByTestId('transcript-analysis')).toHaveText(`An analysis ${marker}. `);
  await expect(page.getByTestId('transcript-output')).toContainText(`An analysis ${marker}.`);
  await expect(page.getByTestId('transcript-decision').getByTestId('decision-summary')).toHaveText(
    'Approve publishing · Approved by the API token',
  );
  expect(await seen(page)).toEqual(live);
  await page.screenshot({ path: screenshotPath('replay-pruned-from-node-rows') });
});
