import { expect, test } from './studio.fixtures';
import {
  api,
  baseUrl,
  openStudio,
  phase,
  screenshotPath,
  script,
  signInByLink,
  sql,
  startRun,
  token,
  words,
} from './studio.fixtures';

test("a thread's timeline steps through its checkpoints, and a fork from an earlier phase with an edited message runs as a branch", async ({
  page,
}) => {
  await openStudio(page);
  await script(words('The first look at it.'));
  await startRun(page, 'Review: the timeline before the fork');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  const firstRun = (await page.getByTestId('run-id').getAttribute('data-id'))!;

  // The timeline: one run, its checkpoints oldest first; it opens on the newest.
  await page.getByTestId('tab-history').click();
  const points = page.getByTestId('history-checkpoint');
  await expect(page.getByTestId('history-run')).toHaveCount(1);
  await expect(points).toHaveCount(5);
  await expect(points).toHaveText([/start/, /after intake/, /waiting at gate/, /after gate/, /after output/]);
  await expect(page.getByTestId('history-position')).toHaveText('5 / 5');
  // Nothing of the run is left after its end: from there, only a new message.
  await expect(page.getByTestId('fork-open')).toHaveText('New message from here');

  // Stepping back: the state at each checkpoint.
  await page.getByTestId('history-prev').click();
  await expect(page.getByTestId('history-position')).toHaveText('4 / 5');
  await expect(page.getByTestId('history-gate')).toHaveText('approved');
  await page.getByTestId('history-prev').click();
  await expect(page.getByTestId('history-gate')).toContainText('waiting:');
  await expect(page.getByTestId('history-output')).toHaveCount(2);
  await page.getByTestId('history-prev').click();
  await expect(page.getByTestId('history-position')).toHaveText('2 / 5');
  await expect(page.getByTestId('history-message')).toHaveText('Review: the timeline before the fork');
  await expect(page.getByTestId('history-output')).toHaveCount(1);
  await expect(page.getByTestId('history-output')).toContainText('The first look at it.');
  await expect(page.getByTestId('history-gate')).toHaveText('—');
  await page.getByTestId('history-next').click();
  await page.getByTestId('history-prev').click();
  await expect(page.getByTestId('history-position')).toHaveText('2 / 5');
  // The keyboard steps too: Up and Down on the timeline, the focus on the checkpoint shown.
  await points.nth(1).focus();
  await page.keyboard.press('ArrowUp');
  await expect(page.getByTestId('history-position')).toHaveText('1 / 5');
  await expect(points.nth(0)).toBeFocused();
  await expect(page.getByTestId('history-output')).toHaveCount(0);
  await page.keyboard.press('ArrowDown');
  await expect(page.getByTestId('history-position')).toHaveText('2 / 5');
  await expect(points.nth(1)).toBeFocused();
  await page.screenshot({ path: screenshotPath('history-timeline') });

  // Fork from after intake, with the message edited: the branch runs analysis and stops at the gate again.
  await page.getByTestId('fork-open').click();
  await expect(page.getByTestId('fork-message')).toHaveValue('Review: the timeline before the fork');
  await page.getByTestId('fork-message').fill('Review: the edited message of the branch');
  await script(words('A second look, from the branch.'));
  await page.getByTestId('fork-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('run-id')).not.toHaveAttribute('data-id', firstRun);
  await expect(page.getByTestId('transcript-analysis')).toContainText('A second look, from the branch.');
  await expect(page.getByTestId('transcript-intake')).toHaveCount(0);
  await expect(phase(page, 'analysis')).toHaveAttribute('data-state', 'completed');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_waiting');

  // The timeline shows the branch beside the original run.
  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-run')).toHaveCount(2);
  await expect(page.getByTestId('history-branch-of')).toHaveText(`branch of ${firstRun.slice(0, 8)} at after intake`);
  await expect(page.getByTestId('history-run').nth(1).getByTestId('history-checkpoint')).toHaveText([
    /branch point/,
    /waiting at gate/,
  ]);
  await expect(page.getByTestId('history-message')).toHaveText('Review: the edited message of the branch');
  await page.screenshot({ path: screenshotPath('history-fork') });

  // The original run is as it was; the branch is a run of its own on the same thread.
  const rows = await sql<{ id: string; thread_id: string; status: string; message: string }>(
    `SELECT id, thread_id, status, message FROM svc_runs WHERE thread_id =
       (SELECT thread_id FROM svc_runs WHERE id = $1) ORDER BY started_at`,
    [firstRun],
  );
  expect(rows.map((r) => [r.status, r.message])).toEqual([
    ['completed', 'Review: the timeline before the fork'],
    ['waiting_approval', 'Review: the edited message of the branch'],
  ]);
  await page.getByTestId('tab-approval').click();
  await script(words('Published from the branch.'));
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
});

test('a new message from where a run ended starts a run that follows it, with nothing else to edit', async ({
  page,
}) => {
  await openStudio(page);
  await script(words('The first answer.'));
  await startRun(page, 'Review: the first question');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  const firstRun = (await page.getByTestId('run-id').getAttribute('data-id'))!;

  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-position')).toHaveText('5 / 5');
  await page.getByTestId('fork-open').click();
  // The message starts empty, and no phase's output can be edited: none runs again.
  await expect(page.getByTestId('fork-message')).toHaveValue('');
  await expect(page.getByTestId('fork-phase')).toHaveCount(0);
  await page.getByTestId('fork-message').fill('Review: and the tests of it?');
  await script(words('About the tests.'));
  await page.getByTestId('fork-submit').click();
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('run-id')).not.toHaveAttribute('data-id', firstRun);
  await expect(page.getByTestId('transcript-intake')).toContainText('About the tests.');

  const runs = await sql<{ message: string; forked_from: { checkpoint_id: string; follows_end?: boolean } | null }>(
    `SELECT message, forked_from FROM svc_runs WHERE thread_id = (SELECT thread_id FROM svc_runs WHERE id = $1)
      ORDER BY started_at`,
    [firstRun],
  );
  expect(runs.map((r) => [r.message, r.forked_from?.follows_end ?? null])).toEqual([
    ['Review: the first question', null],
    ['Review: and the tests of it?', true],
  ]);
  await script(words('Published.'));
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
});

test("a fork from the gate with a phase's output rewritten and another model shows the rewritten text to the approver", async ({
  page,
}) => {
  await openStudio(page);
  await script(words('An analysis to be rewritten.'));
  await startRun(page, 'Review: a gate to fork from');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-reason').fill('not like this');
  await page.getByTestId('gate-reject').click();
  // Rejecting ends the run for good: the card asks once more.
  await page.getByTestId('gate-reject-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('Run rejected');

  await page.getByTestId('tab-history').click();
  await page.getByTestId('history-checkpoint').filter({ hasText: 'waiting at gate' }).click();
  await expect(page.getByTestId('history-gate')).toContainText('waiting:');
  await page.getByTestId('fork-open').click();
  await page.getByTestId('fork-model').selectOption('llama3.2');
  await page.getByTestId('fork-phase').selectOption('analysis');
  await expect(page.getByTestId('fork-phase-text')).toHaveValue('An analysis to be rewritten. ');
  await page.getByTestId('fork-phase-text').fill('An analysis a person wrote instead.');
  await page.getByTestId('fork-submit').click();

  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('gate-context-analysis')).toContainText('An analysis a person wrote instead.');
  await expect(page.getByTestId('run-model-shown')).toContainText('llama3.2');
  const [branch] = await sql<{ model: string; status: string }>(
    `SELECT model, status FROM svc_runs WHERE forked_from IS NOT NULL AND message = 'Review: a gate to fork from'`,
  );
  expect(branch).toEqual({ model: 'llama3.2', status: 'waiting_approval' });
  await page.screenshot({ path: screenshotPath('history-fork-edited-output') });
  await page.getByTestId('gate-reject').click();
  // Rejecting ends the run for good: the card asks once more.
  await page.getByTestId('gate-reject-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('Run rejected');
});

test("a link to a thread (`/ui?thread=…`, as the MCP server's results give) opens that thread's latest run", async ({
  page,
}) => {
  await script(words('Linked summary.'));
  const started = await api('/agents/repo-summary/runs', { method: 'POST', json: { message: 'a linked run' } });
  const { run_id: runId, thread_id: threadId } = (await started.json()) as { run_id: string; thread_id: string };
  await expect
    .poll(async () => ((await (await api(`/runs/${runId}`)).json()) as { status: string }).status)
    .toBe('completed');
  await signInByLink(page, `${baseUrl()}/ui?thread=${threadId}#token=${token()}`, page.getByTestId('run-id'));
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', runId);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  // The link is used once: the address no longer names the thread.
  expect(new URL(page.url()).search).toBe('');
});

test('Fork from here stays in sight at the top of a short History panel, wherever the timeline is scrolled', async ({
  page,
}) => {
  await openStudio(page);
  // A thread of two runs, each through its gate: a timeline and a record longer than the panel.
  for (const [i, message] of ['Review: a long timeline', 'and the follow-up'].entries()) {
    await script(words(`Look number ${i + 1}.`));
    if (i === 0) await startRun(page, message);
    else {
      await page.getByTestId('run-message').fill(message);
      await page.getByTestId('run-continue-thread').check();
      await page.getByTestId('run-submit').click();
    }
    await expect(page.getByTestId('approval-card')).toBeVisible();
    await script(words('Published.'));
    await page.getByTestId('gate-approve').click();
    await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  }
  await page.setViewportSize({ width: 1280, height: 600 });
  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-run')).toHaveCount(2);
  const points = page.getByTestId('history-checkpoint');
  const panel = page.locator('.inspector .body');
  expect(await panel.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);

  // The last checkpoint, then the first: the timeline scrolls, Fork from here stays in sight above it.
  await points.last().click();
  await expect(page.getByTestId('fork-open')).toBeInViewport({ ratio: 1 });
  await points.first().click();
  await expect(page.getByTestId('history-selected')).toHaveText(/^start · run [0-9a-f]{8}$/);
  await panel.evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await expect(page.getByTestId('fork-open')).toBeInViewport({ ratio: 1 });
  await page.screenshot({ path: screenshotPath('history-fork-in-sight') });
  await page.getByTestId('fork-open').click();
  await expect(page.getByTestId('fork-message')).toBeFocused();
  await expect(page.getByTestId('fork-message')).toHaveValue('Review: a long timeline');
});
