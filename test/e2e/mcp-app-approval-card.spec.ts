import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { startAppHost, type AppHost } from './mcp-app-host/app-host';
import { api, baseUrl, expect, script, scriptToolTurns, sql, test, token, words } from './studio.fixtures';

/**
 * The approval card (docs/mcp.md#the-approval-card-mcp-apps) loaded the way an MCP Apps host loads it: the host page
 * of mcp-app-host/ reads the `ui://` resource get_run names through the SDK's client, shows it in a sandbox proxy
 * frame of another origin with the SDK's AppBridge, and hands it get_run's result for a run of change-review (the
 * shipped review agent) waiting at its gate. The card decides through decide_approval, and the HTTP API shows what
 * it decided.
 */

const root = path.resolve(import.meta.dirname, '..', '..');
const SCREENSHOT = path.join(root, 'docs', 'images', 'mcp-app-approval-card.png');

// The host's column and no more, for the screenshot in docs/mcp.md.
test.use({ viewport: { width: 810, height: 700 } });

let host: AppHost;
test.beforeAll(async () => {
  // What `npm run test:e2e` builds first, built here too so that the spec runs alone; instant when up to date.
  execFileSync(process.execPath, ['build/build.mjs', 'mcp-apps'], { cwd: root, stdio: 'pipe' });
  host = await startAppHost(baseUrl(), token());
});
test.afterAll(() => host?.close());

/** A change-review run that waits at its gate with `analysis` as the text it shows. */
async function waitingRun(marker: string, analysis: string): Promise<{ id: string; thread_id: string }> {
  await script(words(analysis));
  const message = `Review: ${marker}`;
  const started = await api('/graphs/change-review/run', { method: 'POST', json: { message } });
  expect(await started.text()).toContain('event: gate_waiting');
  const [run] = await sql<{ id: string; thread_id: string }>(`SELECT id, thread_id FROM svc_runs WHERE message = $1`, [
    message,
  ]);
  return run!;
}

/** The host's page showing the result of `tool`; the card is the frame inside the sandbox proxy's. */
async function showCard(page: Page, tool: string, args: Record<string, unknown>) {
  await page.goto(host.pageUrl(tool, args));
  await expect(page.locator('#host-state')).toHaveAttribute('data-state', 'shown');
  return page.frameLocator('#app').frameLocator('iframe');
}

test('the card shows the gated text; an edit from it approves the gate with the new text, and the run goes on', async ({
  page,
}) => {
  const marker = `card-${randomUUID().slice(0, 8)}`;
  const run = await waitingRun(marker, `Analysis ${marker}: the loader rename is safe to ship.`);
  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));

  const card = await showCard(page, 'get_run', { run_id: run.id });
  await expect(card.getByRole('heading', { name: 'Publish this review to the author?' })).toBeVisible();
  await expect(card.getByRole('region', { name: 'What you decide on' })).toContainText(
    `## analysis\nAnalysis ${marker}: the loader rename is safe to ship.`,
  );
  await expect(card.getByText('member or a higher role')).toBeVisible();
  for (const name of ['Approve', 'Edit', 'Respond', 'Reject']) {
    await expect(card.getByRole('button', { name, exact: true })).toBeEnabled();
  }

  await card.getByRole('button', { name: 'Edit', exact: true }).click();
  await expect(card.getByRole('button', { name: 'Edit', exact: true })).toHaveAttribute('aria-expanded', 'true');
  const text = card.getByLabel('New text of analysis');
  await expect(text).toBeFocused();
  await expect(text).toHaveValue(`Analysis ${marker}: the loader rename is safe to ship. `);
  const edited = `EDITED ${marker}: safe to ship once the migration note is added.`;
  await text.fill(edited);
  await card.getByLabel('Reason (optional)').fill('the migration note is missing');
  const violations = (await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze())
    .violations;
  expect(violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
  await page.screenshot({ path: SCREENSHOT, fullPage: true });

  await card.getByRole('button', { name: 'Approve with this text' }).click();
  await expect(card.getByRole('status')).toHaveText('Approved with your edit: the run goes on.');
  await expect(card.getByRole('status')).toBeFocused();
  await expect(card.getByRole('button', { name: 'Approve', exact: true })).toBeDisabled();
  await expect(page.getByRole('list', { name: "The app's tool calls" })).toHaveText('decide_approval');

  // The record the HTTP API keeps: an edit of the analysis, with the reason, by the token the host's server holds.
  const decisions = await (await api(`/threads/${run.thread_id}/decisions`)).json();
  expect(decisions).toEqual([
    expect.objectContaining({
      gate: 'gate',
      decision: 'edit',
      edits: { analysis: edited },
      reason: 'the migration note is missing',
    }),
  ]);
  // The run went on past the gate with the edited text: its output phase publishes what was approved.
  await expect
    .poll(async () => (await (await api(`/runs/${run.id}`)).json()).status, { timeout: 20_000 })
    .toBe('completed');
  expect((await (await api(`/runs/${run.id}`)).json()).output).toContain(edited);

  // Nothing left the host's two origins: the card fetched nothing, and its calls went through the host.
  expect(requests.filter((url) => !host.origins.some((origin) => url.startsWith(`${origin}/`)))).toEqual([]);
});

test('from the keyboard: a form opens and closes with the focus kept; a decision the server refuses says why', async ({
  page,
}) => {
  const marker = `card-${randomUUID().slice(0, 8)}`;
  const run = await waitingRun(marker, `Analysis ${marker}: fine.`);
  const card = await showCard(page, 'get_run', { run_id: run.id });

  const respond = card.getByRole('button', { name: 'Respond', exact: true });
  await respond.focus();
  await page.keyboard.press('Enter');
  await expect(card.getByLabel('Your answer, sent back to the phase before the gate')).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(respond).toBeFocused();
  await expect(respond).toHaveAttribute('aria-expanded', 'false');

  // A rejection needs its reason: the card says so before it calls anything.
  const reject = card.getByRole('button', { name: 'Reject', exact: true });
  await reject.click();
  await card.getByRole('button', { name: 'Reject with this reason' }).click();
  await expect(card.getByRole('alert')).toHaveText('Say why you reject it.');
  await expect(card.getByLabel('Why you reject it')).toBeFocused();

  // Someone decides the gate elsewhere meanwhile: decide_approval answers an error, which the card shows as it is.
  const approved = await api(`/threads/${run.thread_id}/gates/gate/approve`, { method: 'POST', json: {} });
  expect(approved.status).toBe(202);
  await card.getByLabel('Why you reject it').fill('too late');
  await card.getByRole('button', { name: 'Reject with this reason' }).click();
  await expect(card.getByRole('alert')).toContainText(`gate "gate" is not pending on thread ${run.thread_id}`);
  await expect(card.getByRole('status')).toBeEmpty();
  await expect(reject).toBeEnabled();
  const decisions = await (await api(`/threads/${run.thread_id}/decisions`)).json();
  expect(decisions).toEqual([expect.objectContaining({ decision: 'approve' })]);
});

test("list_approvals: a tool call's card, its arguments edited as JSON, and the call runs with them", async ({
  page,
}) => {
  const marker = `card-${randomUUID().slice(0, 8)}`;
  const folder = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-card-'));
  try {
    await scriptToolTurns([
      [{ name: 'project__write_file', arguments: { path: 'notes/todo.md', content: `model draft ${marker}` } }],
    ]);
    await script(words(`Wrote the notes ${marker}.`));
    const message = `Write the todo notes ${marker}`;
    const started = await api('/graphs/tool-writer/run', { method: 'POST', json: { message, project_path: folder } });
    expect(await started.text()).toContain('event: tool_waiting');

    // Every stop waiting for the caller has a card; this run's is the one with its message's marker in its arguments.
    const frame = await showCard(page, 'list_approvals', {});
    const card = frame.getByRole('article').filter({ hasText: `model draft ${marker}` });
    await expect(card.getByRole('heading', { name: 'Run project.write_file?' })).toBeVisible();
    await expect(card.getByText('tool-writer · Default project')).toBeVisible();
    await expect(card.getByRole('region', { name: 'The tool call' })).toContainText('project.write_file');

    await card.getByRole('button', { name: 'Edit', exact: true }).click();
    const text = card.getByLabel('Arguments (JSON)');
    expect(JSON.parse(await text.inputValue())).toEqual({ path: 'notes/todo.md', content: `model draft ${marker}` });
    await text.fill('{"path": ');
    await card.getByRole('button', { name: 'Run with these arguments' }).click();
    await expect(card.getByRole('alert')).toHaveText('The arguments are not JSON.');
    const edited = { path: 'notes/todo.md', content: `EDITED notes ${marker}` };
    await text.fill(JSON.stringify(edited));
    await text.press('Control+Enter');
    await expect(card.getByRole('status')).toHaveText('Approved with your edit: the run goes on.');

    // The write ran with exactly the edited arguments.
    await expect
      .poll(() => fs.readFile(path.join(folder, 'notes/todo.md'), 'utf8').catch(() => ''))
      .toBe(edited.content);
  } finally {
    const [run] = await sql<{ id: string }>(`SELECT id FROM svc_runs WHERE message = $1`, [
      `Write the todo notes ${marker}`,
    ]);
    if (run) await api(`/runs/${run.id}/cancel`, { method: 'POST', json: {} });
    await fs.rm(folder, { recursive: true, force: true });
  }
});
