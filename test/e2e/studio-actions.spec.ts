import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Scope } from '../../src-server/contracts/tenancy';
import { expect, test } from './studio.fixtures';
import {
  api,
  completeRun,
  holdTheSlot,
  openStudio,
  phase,
  prompts,
  screenshotPath,
  script,
  sql,
  startRun,
  words,
} from './studio.fixtures';

test('a run whose checkpoint is gone is a read-only trace: its card says so and offers no approval', async ({
  page,
}) => {
  await openStudio(page);
  await script(words('Small change, low risk.'));
  await startRun(page, 'Review: a gate whose checkpoint is lost');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('gate-approve')).toBeVisible();
  const [run] = await sql<{ thread_id: string }>(
    `SELECT thread_id FROM svc_runs WHERE message = 'Review: a gate whose checkpoint is lost'`,
  );
  for (const table of ['checkpoint_writes', 'checkpoint_blobs', 'checkpoints']) {
    await sql(`DELETE FROM graph_checkpoints.${table} WHERE thread_id = $1`, [run!.thread_id]);
  }

  await page.reload();
  await page.getByTestId('thread-item').filter({ hasText: 'Review: a gate whose checkpoint is lost' }).click();
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  await page.getByTestId('tab-approval').click();
  await expect(page.getByTestId('gate-readonly')).toContainText('cannot be resumed');
  await expect(page.getByTestId('gate-approve')).toHaveCount(0);
  await expect(phase(page, 'analysis')).toHaveAttribute('data-state', 'completed');
  await expect(page.getByTestId('transcript-intake')).toHaveText('Small change, low risk. ');
});

test('Rerun as new thread repeats agent, model and message in a new thread', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  const firstRun = await completeRun(page, 'Summarise twice', 'First pass.');
  await page.getByTestId('tab-state').click();
  const firstThread = await page.getByTestId('state-thread').locator('[data-id]').getAttribute('data-id');

  await script(words('Second pass.'));
  await page.getByTestId('run-rerun').click();
  await expect(page.getByTestId('run-id')).not.toHaveAttribute('data-id', firstRun!);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('state-thread').locator('[data-id]')).not.toHaveAttribute('data-id', firstThread!);
  await expect(page.getByTestId('transcript-summarize')).toHaveText('Second pass. ');
  const rows = await sql<{ thread_id: string; model: string }>(
    `SELECT thread_id, model FROM svc_runs WHERE message = 'Summarise twice' ORDER BY started_at`,
  );
  expect(rows).toHaveLength(2);
  expect(rows[0]!.thread_id).not.toBe(rows[1]!.thread_id);
  expect(rows[1]!.model).toBe(rows[0]!.model);
});

test('Rerun as new thread, on a run opened again, retries its agent, model, project path and message', async ({
  page,
}) => {
  const marker = `rerun-${randomUUID().slice(0, 8)}`;
  // Only in the project's files, not in the message: a prompt that has it read the project.
  const projectWord = `project-${randomUUID().slice(0, 8)}`;
  // A local folder: the studio signs in with the API token, the instance administrator's, who may name one.
  const project = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-project-'));
  await fs.writeFile(path.join(project, 'README.md'), `# ${projectWord}\n\nThe project both runs read.\n`);
  await openStudio(page, 'repo-summary');
  await page.getByTestId('run-model').selectOption('llama3.2');
  await page.getByTestId('run-project-path').fill(project);
  const firstRun = await completeRun(page, `Summarise ${marker}`, 'First pass.');

  // Opened again after a reload, the run form is empty: the rerun takes what the run itself was given.
  await page.reload();
  await page.getByTestId('thread-item').filter({ hasText: marker }).click();
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', firstRun!);
  await expect(page.getByTestId('run-project-path')).toHaveValue('');
  await page.getByTestId('tab-state').click();
  await expect(page.getByTestId('state-project-path')).toHaveText(project);
  const firstThread = await page.getByTestId('state-thread').locator('[data-id]').getAttribute('data-id');

  const before = (await prompts()).length;
  await script(words('Second pass.'));
  await page.getByTestId('run-rerun').click();
  await expect(page.getByTestId('run-id')).not.toHaveAttribute('data-id', firstRun!);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('state-thread').locator('[data-id]')).not.toHaveAttribute('data-id', firstThread!);
  await expect(page.getByTestId('state-message')).toHaveText(`Summarise ${marker}`);
  await expect(page.getByTestId('state-project-path')).toHaveText(project);
  await expect(page.getByTestId('run-model-shown')).toHaveText('llama3.2');
  await expect(page.getByTestId('transcript-summarize')).toHaveText('Second pass. ');
  await expect(page.getByTestId('thread-item').filter({ hasText: marker })).toHaveCount(2);
  await page.screenshot({ path: screenshotPath('rerun-with-project-path') });

  // The new run's model read the same project.
  const rerun = await prompts(before);
  expect(rerun.length).toBeGreaterThan(0);
  for (const prompt of rerun) {
    expect(prompt.model).toBe('llama3.2');
    expect(prompt.used).toContain(projectWord);
  }
  const rows = await sql<{ thread_id: string; agent: string; model: string; project_path: string }>(
    `SELECT thread_id, agent, model, project_path FROM svc_runs WHERE message = $1 ORDER BY started_at`,
    [`Summarise ${marker}`],
  );
  expect(rows).toHaveLength(2);
  expect(rows[1]!.thread_id).not.toBe(rows[0]!.thread_id);
  expect(rows.map(({ agent, model, project_path }) => [agent, model, project_path])).toEqual([
    ['repo-summary', 'llama3.2', project],
    ['repo-summary', 'llama3.2', project],
  ]);
  await fs.rm(project, { recursive: true, force: true });
});

test('a call over the context budget is trimmed inside, with the yellow warning, and the run completes', async ({
  page,
}) => {
  await openStudio(page, 'repo-summary');
  // The first phase answers at length: about 5,000 estimated tokens, which the next phase's prompt carries. It
  // streams in pieces of ten words, so that the runtime counts fewer answer tokens than LOCAL_LLM_MAX_ANSWER_TOKENS
  // and the answer is not cut at its length (which would warn first, and shorten what the next phase carries).
  await script(['Done. ', ...Array.from({ length: 290 }, () => 'answer '.repeat(10))]);
  // About 4,000 estimated tokens: within the default budget of 6,000 on its own, over it with that answer.
  await startRun(page, `Summarise this: ${'lorem ipsum '.repeat(1_300)}`);
  await expect(page.getByTestId('context-warning').first()).toContainText('budget 6000');
  await expect(page.getByTestId('context-warning').first()).toContainText('cut: output:dispatch');
  await expect(page.getByTestId('context-warning').first()).toHaveCSS('background-color', 'rgb(254, 249, 195)');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
});

test('a message over the context budget on its own fails the run, saying so, and nothing is sent', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  await script(words('Done.'));
  // About 7,500 estimated tokens: over the default budget of 6,000 on its own.
  await startRun(page, `Summarise this: ${'lorem ipsum '.repeat(2_500)}`);
  await expect(page.getByTestId('run-status')).toContainText('ContextBudgetError');
  await expect(page.getByTestId('context-warning').first()).toContainText('the call was not sent');
});

test('the queue badge Reset frees a leaked slot: the waiting run starts', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  const reader = await holdTheSlot('leak the slot', 'z');
  await expect(page.getByTestId('queue-badge')).toHaveClass(/busy/);
  await expect(page.getByTestId('queue-badge')).toHaveCSS('background-color', 'rgb(254, 249, 195)');
  await startRun(page, 'Wait for the leaked slot');
  await expect(page.getByTestId('queue-banner')).toBeVisible();
  await expect(page.getByTestId('queue-badge')).toHaveClass(/waiting/);

  // The queue is PostgreSQL's, shared by every server process: Reset frees the slots they all hold.
  await expect(page.getByTestId('queue-reset')).toHaveAttribute(
    'title',
    "Free the local-runtime slots held on every server and clear the queue's counters (kept in the shared database); " +
      'waiting calls keep their places, and no run is touched',
  );
  await page.getByTestId('queue-reset').click();
  // It is asked first, and says what it did.
  await expect(page.getByTestId('confirm-dialog')).toContainText('Reset the queue?');
  await page.getByTestId('confirm-ok').click();
  await expect(page.getByTestId('toast')).toContainText('Queue reset');
  await expect(page.getByTestId('queue-banner')).toBeHidden();
  await expect(page.getByTestId('transcript-dispatch')).toContainText('z1');
  await page.getByTestId('run-stop').click();
  const [held] = await sql<{ id: string }>(`SELECT id FROM svc_runs WHERE message = 'leak the slot'`);
  await api(`/runs/${held!.id}/cancel`, { method: 'POST', json: {} });
  await reader.cancel();
});

test('the project switcher runs in the chosen project and lists only its threads', async ({ page }) => {
  const [team] = (await (await api('/teams')).json()) as Scope[];
  const created = await api('/projects', { method: 'POST', json: { name: 'Browser tests', parent_id: team!.id } });
  expect(created.status).toBe(201);
  const project = (await created.json()) as Scope;

  await openStudio(page, 'repo-summary');
  await expect(page.getByTestId('scope-org')).toBeVisible();
  await page.getByTestId('scope-project').selectOption(project.id);
  await completeRun(page, 'A run in the browser-tests project', 'In the new project.');
  const [thread] = await sql<{ project_id: string }>(
    `SELECT project_id FROM svc_threads WHERE last_message = 'A run in the browser-tests project'`,
  );
  expect(thread!.project_id).toBe(project.id);
  await expect(page.getByTestId('thread-item')).toHaveCount(1);

  await page.reload();
  await expect(page.getByTestId('scope-project')).toHaveValue(project.id);
  const other = await page
    .getByTestId('scope-project')
    .locator('option')
    .filter({ hasNotText: 'Browser tests' })
    .filter({ hasNotText: 'All projects' })
    .first()
    .getAttribute('value');
  await page.getByTestId('scope-project').selectOption(other!);
  await expect(page.getByTestId('thread-item').filter({ hasText: 'A run in the browser-tests project' })).toHaveCount(
    0,
  );
  await page.getByTestId('scope-project').selectOption('');
  await expect(page.getByTestId('thread-item').filter({ hasText: 'A run in the browser-tests project' })).toHaveCount(
    1,
  );
  await api(`/projects/${project.id}`, { method: 'DELETE' });
});

test('the State tab shows thread, last node, output tail and the phase trail', async ({ page }) => {
  await openStudio(page);
  await script(words('Rename only. Risk is low.'));
  await startRun(page, 'Review: state tab');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await page.getByTestId('tab-state').click();
  await expect(page.getByTestId('state-thread').locator('[data-id]')).toHaveAttribute('data-id', /^[0-9a-f-]{36}$/);
  await expect(page.getByTestId('state-thread')).toHaveText(/^[0-9a-f]{8}$/);
  await expect(page.getByTestId('state-last-node')).toHaveText('output');
  await expect(page.getByTestId('state-tail')).toHaveText('Rename only. Risk is low. ');
  await expect(page.getByTestId('state-trail')).toHaveText('intake › analysis › gate › output');
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.screenshot({ path: screenshotPath('09-state-1920') });
});

test('keyboard only: choose an agent, open a phase, run with Ctrl+Enter, approve', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  await page.getByTestId('asset-change-review').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('asset-change-review')).toHaveClass(/selected/);
  await phase(page, 'intake').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('phase-config')).toBeVisible();

  await script(words('Keyboard review.'));
  await page.getByTestId('run-message').focus();
  await page.keyboard.type('Review: typed,');
  // Enter is a new line in the message; Ctrl+Enter runs it.
  await page.keyboard.press('Enter');
  await page.keyboard.type('not clicked');
  await expect(page.getByTestId('run-message')).toHaveValue('Review: typed,\nnot clicked');
  await page.keyboard.press('Control+Enter');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-approve').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
});

test('the message box starts empty for another thread or agent, and "continue this thread" keeps the choice made', async ({
  page,
}) => {
  await openStudio(page, 'repo-summary');
  await completeRun(page, 'First summary of the day', 'One.');
  await completeRun(page, 'Second summary of the day', 'Two.');
  // The second run was sent as a new thread: after it, the box stays as the person left it.
  await expect(page.getByTestId('run-continue-thread')).not.toBeChecked();

  await page.getByTestId('run-message').fill('meant for the second thread');
  await page.getByTestId('thread-item').filter({ hasText: 'First summary of the day' }).click();
  await expect(page.getByTestId('run-id')).not.toBeEmpty();
  await expect(page.getByTestId('run-message')).toHaveValue('');
  // A thread the person opened: the next message continues it.
  await expect(page.getByTestId('run-continue-thread')).toBeChecked();

  await page.getByTestId('run-message').fill('meant for repo-summary');
  await page.getByTestId('asset-explain-error').click();
  await expect(page.getByTestId('run-message')).toHaveValue('');

  // A thread opened while its run waits for a decision: it was opened to decide, and nothing asks what a message
  // would do to that run until the person chooses to continue it.
  await openStudio(page);
  await script(words('Waiting for you.'));
  await startRun(page, 'Review: opened to decide');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('thread-item').filter({ hasText: 'First summary of the day' }).click();
  await expect(page.getByTestId('run-continue-thread')).toBeChecked();
  await page.getByTestId('thread-item').filter({ hasText: 'Review: opened to decide' }).click();
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('run-continue-thread')).not.toBeChecked();
  await expect(page.getByTestId('run-busy-choice')).toHaveCount(0);
  await page.getByTestId('run-continue-thread').check();
  await expect(page.getByTestId('run-busy-choice')).toBeVisible();
  await page.getByTestId('gate-reject').click();
  await page.getByTestId('gate-reject-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('Run rejected');
});
