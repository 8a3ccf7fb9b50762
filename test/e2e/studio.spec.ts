import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import type { QueueStatus } from '../../src-server/contracts/models';
import type { GraphDefinition, RunAccepted } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { numberedTokens } from '../fixtures/fake-models';
import { expect, test } from './studio.fixtures';
import {
  api,
  completeRun,
  failModel,
  fromHeader,
  holdTheSlot,
  openStudio,
  phase,
  screenshotPath as shot,
  script,
  sql,
  startRun,
  words,
} from './studio.fixtures';

/** Starts a repo-summary run streaming `tokens` `delayMs` apart; resolves with its run id once `until` has streamed. */
async function startStreaming(
  page: Page,
  message: string,
  tokens: string[],
  delayMs: number,
  until: string,
): Promise<string | null> {
  await openStudio(page, 'repo-summary');
  await script(tokens, delayMs);
  await startRun(page, message);
  await expect(page.getByTestId('transcript-dispatch')).toContainText(until);
  return page.getByTestId('run-id').getAttribute('data-id');
}

test('runs an agent to its gate and approves it: canvas colours, transcript and approval card', async ({ page }) => {
  await openStudio(page);
  await page.screenshot({ path: shot('01-studio') });
  // About a second a phase, so the active phase is seen while it streams, even on a busy machine.
  await script(words('The change renames the loader and adds tests. Risk is low.'), 80);
  await startRun(page, 'Review: rename the config loader');

  // The state and its colour are read in one snapshot: read one after the other, the phase can end between them.
  await expect
    .poll(() => phase(page, 'intake').evaluate((el) => `${el.dataset.state} ${getComputedStyle(el).borderTopColor}`), {
      intervals: [50],
    })
    .toBe('active rgb(37, 99, 235)');
  await expect(page.getByTestId('transcript-intake')).toContainText('The change renames');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('approval-card')).toContainText('Publish this review to the author?');
  await expect(page.getByTestId('approval-card')).toContainText('Risk is low.');
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  await expect(phase(page, 'intake')).toHaveAttribute('data-state', 'completed');
  await expect(phase(page, 'analysis')).toHaveCSS('border-top-color', 'rgb(22, 163, 74)');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_waiting');
  await page.screenshot({ path: shot('02-approval') });

  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_passed');
  await expect(phase(page, 'gate')).toHaveCSS('border-top-color', 'rgb(13, 148, 136)');
  await expect(phase(page, 'output')).toHaveAttribute('data-state', 'completed');
  // The output phase publishes the approved analysis itself (this run has no project to write it into: it says so).
  await expect(page.getByTestId('transcript-output')).toContainText(
    'The change renames the loader and adds tests. Risk is low.',
  );
  // The whole run id is there for a copy and a script; people read its first 8 characters.
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', /^[0-9a-f-]{36}$/);
  const runId = (await page.getByTestId('run-id').getAttribute('data-id'))!;
  await expect(page.getByTestId('run-id')).toHaveText(runId.slice(0, 8));
  await page.screenshot({ path: shot('03-completed') });
});

test('rejects at the gate: the run ends without the output phase', async ({ page }) => {
  await openStudio(page);
  await startRun(page, 'Review: remove all tests');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-reason').fill('not acceptable');
  await page.getByTestId('gate-reject').click();
  // Rejecting ends the run for good: the card asks once more.
  await page.getByTestId('gate-reject-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('✕ Run rejected');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_rejected');
  await expect(phase(page, 'output')).toHaveAttribute('data-state', 'idle');
  const runId = await page.getByTestId('run-id').getAttribute('data-id');
  const [row] = await sql<{ status: string }>('SELECT status FROM svc_runs WHERE id = $1', [runId]);
  expect(row!.status).toBe('rejected');
});

test('Stop during streaming aborts the stream and cancels the run on the server', async ({ page }) => {
  const runId = await startStreaming(page, 'Summarise slowly', numberedTokens(300, 'w'), 40, 'w3');
  await page.getByTestId('run-stop').click();
  await expect(page.getByTestId('run-status')).toContainText('Run cancelled: Stop pressed while it streamed');
  await expect
    .poll(async () => (await sql<{ status: string }>('SELECT status FROM svc_runs WHERE id = $1', [runId]))[0]!.status)
    .toBe('cancelled');
  await expect(phase(page, 'dispatch')).toHaveAttribute('data-state', 'cancelled');
});

test('a page reload during a run re-attaches to its stream', async ({ page }) => {
  const runId = await startStreaming(page, 'Summarise, then reload', numberedTokens(60, 'r'), 30, 'r5');
  await page.reload();
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', runId!);
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete', { timeout: 30_000 });
  await expect(page.getByTestId('transcript-summarize')).toContainText('r59');
  await expect(page.getByTestId('transcript-dispatch')).toContainText('r0 r1 r2');
});

test('selecting a thread restores its node states, output, error detail, run id and model', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  const runId = await completeRun(page, 'A thread to restore', 'Restored output text.');

  await page.reload();
  await page.getByTestId('asset-change-review').click();
  await page.getByTestId('thread-item').filter({ hasText: 'A thread to restore' }).click();
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', runId!);
  await expect(page.getByTestId('run-model-shown')).toHaveText('fake-model');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(phase(page, 'summarize')).toHaveAttribute('data-state', 'completed');
  await expect(page.getByTestId('transcript-summarize')).toHaveText('Restored output text. ');
  await page.getByTestId('tab-state').click();
  await expect(page.getByTestId('state-trail')).toHaveText('dispatch › execute › summarize');
  await expect(page.getByTestId('state-last-node')).toHaveText('summarize');
});

test('shows the queue banner and the badge while the single slot is busy', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  const reader = await holdTheSlot('hold the slot', 'q');
  await startRun(page, 'I have to wait');
  await expect(page.getByTestId('queue-banner')).toContainText('Queued: position 1');
  await expect(page.getByTestId('queue-badge')).toHaveClass(/waiting/);
  await expect(page.getByTestId('queue-badge')).toHaveCSS('background-color', 'rgb(220, 38, 38)');
  await page.screenshot({ path: shot('04-queued') });
  const blocked = (
    await sql<{ id: string }>(
      `SELECT id FROM svc_runs WHERE message = 'hold the slot' ORDER BY started_at DESC LIMIT 1`,
    )
  )[0]!;
  await api(`/runs/${blocked.id}/cancel`, { method: 'POST', json: {} });
  await reader.cancel();
  await expect(page.getByTestId('queue-banner')).toBeHidden();
  await expect(page.getByTestId('transcript-dispatch')).toContainText('q1');
  await page.getByTestId('run-stop').click();
});

/** Starts a repo-summary run through the API, as JSON: the run goes on without anyone following its stream. */
async function startInBackground(message: string): Promise<string> {
  const res = await api('/graphs/repo-summary/run', {
    method: 'POST',
    json: { message },
    headers: { accept: 'application/json' },
  });
  expect(res.ok).toBe(true);
  return ((await res.json()) as RunAccepted).run_id;
}

/** Waits until the local-runtime queue is as given. */
async function queueIs(expected: Partial<QueueStatus>): Promise<void> {
  await expect.poll(async () => (await (await api('/queue/status')).json()) as QueueStatus).toMatchObject(expected);
}

test('the Queued banner shows the place in line and the estimated wait, built on how long calls take', async ({
  page,
}) => {
  const [stats] = await sql<{ recent_s: number[] }>(`SELECT recent_s FROM svc_llm_queue_stats WHERE id = 1`);
  // The last calls held their slot 40 s each: a call just started is expected to hold it about that long.
  await sql(`UPDATE svc_llm_queue_stats SET recent_s = '{40,40}' WHERE id = 1`);
  try {
    await openStudio(page, 'repo-summary');
    await script(numberedTokens(400, 'h'), 100);
    const holder = await startInBackground('hold the only slot');
    await queueIs({ slots: 1, active: 1, waiting: 0 });
    const first = await startInBackground('first in line');
    await queueIs({ active: 1, waiting: 1 });

    await startRun(page, 'Second in line');
    const banner = page.getByTestId('queue-banner');
    await expect(banner).toContainText('Queued: position 2, estimated wait');
    await expect(page.getByTestId('queue-badge')).toContainText('Queue 1/1 busy · 2 waiting');
    // The call holding the slot has the rest of its 40 s to go, then the first in line its 40 s.
    const second = Number(/estimated wait (\d+) s$/.exec((await banner.textContent())!.trim())?.[1]);
    expect(second).toBeGreaterThan(60);
    expect(second).toBeLessThanOrEqual(80);
    await page.screenshot({ path: shot('04-queued-position-2') });

    // The run ahead leaves the line: this one moves up, and waits only for the call holding the slot.
    await api(`/runs/${first}/cancel`, { method: 'POST', json: {} });
    await expect(banner).toContainText('Queued: position 1, estimated wait');
    const next = Number(/estimated wait (\d+) s$/.exec((await banner.textContent())!.trim())?.[1]);
    expect(next).toBeGreaterThan(20);
    expect(next).toBeLessThanOrEqual(40);

    await script(words('Summarised after the wait.'));
    await api(`/runs/${holder}/cancel`, { method: 'POST', json: {} });
    await expect(banner).toBeHidden();
    await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  } finally {
    await sql(`UPDATE svc_llm_queue_stats SET recent_s = $1 WHERE id = 1`, [stats!.recent_s]);
  }
});

test('a failed run shows the exact exception text, also after reload', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  await failModel(500, 'model crashed: out of memory');
  await startRun(page, 'This will fail');
  await expect(page.getByTestId('run-status')).toContainText('✕ Run failed');
  await expect(page.getByTestId('run-error')).toHaveText('ResponseError: model crashed: out of memory');
  await expect(phase(page, 'dispatch')).toHaveAttribute('data-state', 'error');
  await page.screenshot({ path: shot('05-failed') });
  await page.reload();
  await page.getByTestId('thread-item').filter({ hasText: 'This will fail' }).click();
  await expect(page.getByTestId('run-error')).toHaveText('ResponseError: model crashed: out of memory');
});

test('a run still running after two minutes appears stuck, and can be cancelled', async ({ page }) => {
  const thread = randomUUID();
  const run = randomUUID();
  await sql(
    `INSERT INTO svc_threads (id, agent, model, last_message, project_id) VALUES ($1, 'repo-summary', 'fake-model', 'stuck since a crash', '00000000-0000-4000-8000-000000000003')`,
    [thread],
  );
  await sql(
    `INSERT INTO svc_runs (id, thread_id, agent, model, status, message, started_at) VALUES ($1, $2, 'repo-summary', 'fake-model', 'running', 'stuck since a crash', now() - interval '3 minutes')`,
    [run, thread],
  );
  await openStudio(page, 'repo-summary');
  await page.getByTestId('thread-item').filter({ hasText: 'stuck since a crash' }).click();
  await expect(page.getByTestId('run-stuck')).toHaveText('⚠ Run appears stuck');
  await page.getByTestId('run-cancel').click();
  await expect(page.getByTestId('run-status')).toContainText('Run cancelled: Cancel run pressed');
  expect((await sql<{ status: string }>('SELECT status FROM svc_runs WHERE id = $1', [run]))[0]!.status).toBe(
    'cancelled',
  );
});

test('a run that started over two minutes ago appears stuck while its stream is live', async ({ page }) => {
  const runId = await startStreaming(page, 'Busy, yet started long ago', numberedTokens(400, 's'), 100, 's3');
  await sql(`UPDATE svc_runs SET started_at = now() - interval '3 minutes' WHERE id = $1`, [runId]);
  // After the reload the studio re-attaches to the live stream with the stored start time.
  await page.reload();
  await expect(page.getByTestId('run-id')).toHaveAttribute('data-id', runId!);
  await expect(page.getByTestId('run-stuck')).toHaveText('⚠ Run appears stuck');
  const streamed = await page.getByTestId('transcript-dispatch').textContent();
  await expect(page.getByTestId('transcript-dispatch')).not.toHaveText(streamed!);
  await expect(page.getByTestId('run-stuck')).toBeVisible();
  await page.screenshot({ path: shot('09-stuck-while-live') });
  await page.getByTestId('run-stop').click();
  await expect(page.getByTestId('run-status')).toContainText('Run cancelled');
});

test('a saved routing rule shows its validation errors, then its from → to line on the next run', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  const graph = (await (await api('/agents/repo-summary/graph-definition')).json()) as GraphDefinition;
  await phase(page, 'dispatch').click();
  await expect(page.getByTestId('phase-config')).toContainText(
    graph.phases.find((p) => p.id === 'dispatch')!.description,
  );
  await page.getByTestId('rule-add').click();
  await page.getByTestId('rule-0-condition').selectOption('regex');
  await page.getByTestId('rule-0-match').fill('(unclosed');
  await page.getByTestId('rule-0-target').selectOption('summarize');
  await page.getByTestId('config-save').click();
  await expect(page.getByTestId('rule-0-error')).toContainText('invalid regular expression');

  await page.getByTestId('rule-0-condition').selectOption('contains');
  await page.getByTestId('rule-0-match').fill('shortcut');
  await page.getByTestId('config-save').click();
  await expect(page.getByTestId('config-saved')).toBeVisible();
  await page.screenshot({ path: shot('06-phase-config') });

  await script(words('take the shortcut please'));
  await startRun(page, 'Summarise with a shortcut');
  await expect(page.getByTestId('route-lines')).toHaveText('dispatch → summarize');
  await expect(phase(page, 'summarize')).toHaveAttribute('data-flash', 'cyan');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(phase(page, 'execute')).toHaveAttribute('data-state', 'idle');
  // The studio saved for the project chosen in its switcher, or for the organisation: clear both.
  for (const scope of [`project_id=${DEFAULT_PROJECT_ID}`, `org_id=${DEFAULT_ORG_ID}`]) {
    await api(`/agents/repo-summary/nodes/dispatch/config?${scope}`, { method: 'DELETE' });
  }
});

test("the phase panel shows an asset's own routing rules read-only, above the editable overrides", async ({ page }) => {
  await openStudio(page, 'routed-summary');
  await phase(page, 'dispatch').click();
  const own = page.getByTestId('phase-own-routes');
  await expect(own.getByRole('listitem')).toHaveText([
    'contains "urgent" → summarize (priority 1)',
    'always → execute (priority 5)',
  ]);
  await expect(own.locator('input, select, textarea, button')).toHaveCount(0);
  const ownBox = (await own.boundingBox())!;
  const overridesBox = (await page.getByRole('group', { name: /Routing rules/ }).boundingBox())!;
  expect(ownBox.y + ownBox.height).toBeLessThanOrEqual(overridesBox.y);
  await page.screenshot({ path: shot('10-own-routes') });
  // A phase without rules of its own shows none.
  await phase(page, 'execute').click();
  await expect(page.getByTestId('phase-config').locator('h3 code')).toHaveText('execute');
  await expect(page.getByTestId('phase-own-routes')).toHaveCount(0);
});

test('pane sizes survive a reload', async ({ page }) => {
  await openStudio(page);
  const handle = page.getByRole('separator', { name: 'Resize navigation' });
  const box = (await handle.boundingBox())!;
  await page.mouse.move(box.x + 2, box.y + 200);
  await page.mouse.down();
  await page.mouse.move(box.x + 102, box.y + 200, { steps: 5 });
  await page.mouse.up();
  await page.getByRole('separator', { name: 'Resize output' }).focus();
  await page.keyboard.press('ArrowUp');
  const sizes = await page.evaluate(() => JSON.parse(localStorage.getItem('svc.panes') ?? '{}'));
  expect(sizes.left).toBeGreaterThanOrEqual(350);
  expect(sizes.bottom).toBe(280);
  await page.reload();
  await expect(page.getByTestId('asset-change-review')).toBeVisible();
  const navWidth = await page.locator('nav').evaluate((el) => el.getBoundingClientRect().width);
  expect(Math.round(navWidth)).toBe(sizes.left);
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.screenshot({ path: shot('07-wide') });
});

test('the token from the URL fragment is stored and removed from the address bar; sign out asks again', async ({
  page,
}) => {
  await openStudio(page);
  expect(page.url()).not.toContain('token=');
  expect(await page.evaluate(() => localStorage.getItem('svc.token'))).toBe(process.env.E2E_TOKEN);
  await fromHeader(page, 'sign-out');
  await expect(page.getByTestId('sign-in')).toBeVisible();
  await page.getByTestId('sign-in-token').fill(process.env.E2E_TOKEN!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('asset-change-review')).toBeVisible();
});

test('the portal page links the studio and the docs with copy-ready examples at the real address', async ({
  page,
  context,
}) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const base = process.env.E2E_BASE_URL!;
  await page.goto(`${base}/`);
  await expect(page.getByRole('link', { name: /studio/i }).first()).toHaveAttribute('href', '/ui');
  await expect(page.getByRole('link', { name: /API docs/i }).first()).toHaveAttribute('href', '/docs');
  await expect(page.locator('pre').first()).toContainText(`export BASE=${base}`);
  await expect(page.locator('pre[data-example=run]')).toContainText('curl -N -X POST "$BASE/graphs/change-review/run"');
  await expect(page.locator('pre[data-example=start]')).toContainText('curl -X POST "$BASE/agents/change-review/runs"');
  await expect(page.locator('pre[data-example=approve]')).toContainText('/gates/gate/approve');
  await expect(page.locator('pre[data-example=edit]')).toContainText('"edits": {"analysis"');
  await expect(page.locator('pre[data-example=respond]')).toContainText('/gates/gate/respond');
  await expect(page.locator('pre[data-example=inbox]')).toContainText('curl "$BASE/approvals"');
  await page
    .locator('.example')
    .filter({ has: page.locator('pre[data-example=run]') })
    .getByRole('button', { name: 'Copy' })
    .click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(
    await page.locator('pre[data-example=run]').textContent(),
  );
  await page.screenshot({ path: shot('08-portal'), fullPage: true });
});
