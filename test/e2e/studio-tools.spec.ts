import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import {
  api,
  expect,
  openStudio,
  phase,
  screenshotPath,
  script,
  scriptToolTurns,
  startRun,
  test,
  words,
  type ScriptedToolCall,
} from './studio.fixtures';

/**
 * Tool calls a person decides: a write the model asked for, edited in the inbox and run with exactly the edited
 * arguments; two writes of one model turn, decided one after the other from the run's approval card. The agent
 * (test/e2e/assets/agents/tool-writer.md) writes with project.write_file, which asks before every write; its run's
 * project is a folder of the test's own, which the studio, signed in with the server's token, may name.
 */

const writeFile = (file: string, content: string): ScriptedToolCall => ({
  name: 'project__write_file',
  arguments: { path: file, content },
});

/** An empty project folder for one test, removed after it. */
async function projectFolder(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-tools-'));
}

const exists = (file: string) =>
  fs.access(file).then(
    () => true,
    () => false,
  );

/** What axe-core finds against WCAG 2.1 A and AA in one part of the page, a line per element. */
async function violations(page: Page, selector: string): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page })
    .include(selector)
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

/** Starts a tool-writer run on the project folder from the studio's run form. */
async function startWriterRun(page: Page, folder: string, message: string): Promise<void> {
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openStudio(page, 'tool-writer');
  await page.getByTestId('run-project-path').fill(folder);
  await startRun(page, message);
}

test('a write edited in the inbox: a bad edit is refused as it is typed, the good one runs exactly as edited', async ({
  page,
}) => {
  const marker = `tools-${randomUUID().slice(0, 8)}`;
  const folder = await projectFolder();
  try {
    await scriptToolTurns([[writeFile('notes/todo.md', `model draft ${marker}`)]]);
    await script(words(`Wrote the notes ${marker}.`));
    await startWriterRun(page, folder, `Write the todo notes ${marker}`);

    // The run waits at the call: its phase is marked waiting for it, and the card asks about the exact call.
    const card = page.getByTestId('approval-card');
    await expect(card).toHaveAttribute('data-kind', 'tool-call');
    await expect(card.getByRole('heading', { name: 'Run project.write_file?' })).toBeVisible();
    await expect(phase(page, 'intake')).toHaveAttribute('data-state', 'tool_waiting');
    await expect(page.getByTestId('phase-mark-intake')).toHaveText('waits for a tool call');
    await expect(page.getByTestId('phase-tools-intake')).toContainText('uses tools: project.*');
    await expect(page.getByTestId('run-status')).toContainText('Waiting for approval of a tool call');
    const waitingCall = page.getByTestId('transcript-tool-call');
    await expect(waitingCall).toHaveAttribute('data-status', 'waiting');
    await expect(waitingCall.getByTestId('tool-call-arguments')).toContainText(`"content": "model draft ${marker}"`);
    expect(await violations(page, '[data-testid="approval-card"]')).toEqual([]);
    await page.screenshot({ path: screenshotPath('tools-waiting') });

    // The inbox holds the call, with the tool, its server and description, and the arguments to edit.
    await page.getByTestId('inbox-open').click();
    // The call's item: once it is decided the run goes on to its gate, whose item names the same run.
    const item = page.locator('[data-testid="inbox-item"][data-kind="tool-call"]').filter({ hasText: marker });
    await expect(item).toHaveCount(1);
    await expect(item.getByRole('heading')).toHaveText('Run project.write_file?');
    await expect(item.getByTestId('tool-call-tool')).toHaveText('project.write_file');
    await expect(item.getByTestId('tool-call-server')).toHaveText('project');
    await expect(item.getByTestId('tool-call-description')).toContainText('Writes a text file of the project');
    const editor = item.getByRole('textbox', { name: /Arguments \(JSON\)/ });
    await expect(editor).toHaveValue(
      JSON.stringify({ path: 'notes/todo.md', content: `model draft ${marker}` }, null, 2),
    );
    const approve = item.getByTestId('tool-approve');
    await expect(approve).toHaveText('Approve and run');

    // Content that is not a string does not fit the tool's input schema: said at once, and nothing can be approved.
    await editor.fill(JSON.stringify({ path: 'notes/todo.md', content: 42 }, null, 2));
    const problems = item.getByTestId('tool-arguments-problems');
    await expect(problems).toContainText('The call cannot run with these arguments');
    await expect(problems).toContainText('/content');
    await expect(editor).toHaveAttribute('aria-invalid', 'true');
    await expect(approve).toBeDisabled();
    await editor.fill('{ "path": "notes/todo.md", ');
    await expect(problems).toContainText('not JSON');
    await expect(approve).toBeDisabled();
    await item.scrollIntoViewIfNeeded();
    expect(await violations(page, '[data-testid="inbox-item"][data-kind="tool-call"]')).toEqual([]);
    await page.screenshot({ path: screenshotPath('tools-inbox-invalid-edit') });

    const edited = `edited ${marker}: ship on Friday`;
    await editor.fill(JSON.stringify({ path: 'notes/todo.md', content: edited }, null, 2));
    await expect(problems).not.toContainText('cannot run');
    await expect(editor).toHaveAttribute('aria-invalid', 'false');
    await expect(item.getByTestId('tool-arguments-edited')).toBeVisible();
    await expect(approve).toHaveText('Approve with edited arguments');
    await item.getByTestId('tool-reason').fill('Friday, not Monday');
    await page.screenshot({ path: screenshotPath('tools-inbox-edit') });
    await approve.click();
    await expect(page.getByTestId('inbox-notice')).toContainText('Approved with your arguments');
    await expect(item).toHaveCount(0);

    // The file holds exactly the edited content, not the model's.
    await expect.poll(() => fs.readFile(path.join(folder, 'notes/todo.md'), 'utf8').catch(() => null)).toBe(edited);

    // The run on screen went on to its gate; the call shows how it was decided, what it ran with and its answer.
    await page.getByTestId('inbox-close').click();
    await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
    await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_waiting');
    await expect(phase(page, 'intake')).toHaveAttribute('data-state', 'completed');
    await expect(page.getByTestId('phase-mark-intake')).toHaveCount(0);
    const call = page.getByTestId('transcript-tool-call');
    await expect(call).toHaveAttribute('data-status', 'edited');
    await expect(call.getByTestId('tool-call-status')).toHaveText(
      'Approved with edited arguments by the API token; ran',
    );
    await expect(call.getByTestId('tool-call-reason')).toHaveText('“Friday, not Monday”');
    await expect(call.getByTestId('tool-call-edited')).toContainText(edited);
    await expect(call.getByTestId('tool-call-result')).toContainText('created notes/todo.md');
    await expect(page.getByTestId('transcript-intake')).toContainText(`Wrote the notes ${marker}.`);
    // The record of the decision, on the card now asking at the gate.
    const record = page.getByTestId('gate-decision');
    await expect(record).toContainText('tool call · Approved with edited arguments by the API token');
    await expect(record.getByTestId('decision-arguments')).toContainText(edited);
    await call.scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('tools-edited-ran') });
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
});

test('two writes of one turn, decided one after the other: the first approved, the second rejected', async ({
  page,
}) => {
  const marker = `two-${randomUUID().slice(0, 8)}`;
  const folder = await projectFolder();
  try {
    await scriptToolTurns([[writeFile('one.md', `first ${marker}`), writeFile('two.md', `second ${marker}`)]]);
    await script(words(`Wrote one of the two ${marker}.`));
    await startWriterRun(page, folder, `Write two files ${marker}`);

    const card = page.getByTestId('approval-card');
    const editor = card.getByTestId('tool-arguments');
    await expect(editor).toHaveValue(/"path": "one.md"/);
    await expect(card.getByTestId('tool-call-tool')).toHaveText('project.write_file');
    // Answering in the tool's place: each field says who reads it.
    await card.getByTestId('tool-respond').click();
    await expect(card.getByTestId('tool-response')).toHaveAccessibleDescription(
      "The call is not run: the model reads your answer as the tool's, and goes on.",
    );
    await expect(card.getByTestId('tool-reason')).toHaveAccessibleDescription(
      "For people: kept with the decision in the thread's record. The model does not read it.",
    );
    await card.getByTestId('tool-respond-cancel').click();
    await card.getByTestId('tool-approve').click();

    // The second call of the same turn asks next, with nothing typed for the first carried over.
    await expect(editor).toHaveValue(/"path": "two.md"/);
    await expect(card.getByTestId('tool-reason')).toHaveValue('');
    await expect(phase(page, 'intake')).toHaveAttribute('data-state', 'tool_waiting');
    expect(await fs.readFile(path.join(folder, 'one.md'), 'utf8')).toBe(`first ${marker}`);
    const calls = page.getByTestId('transcript-tool-call');
    await expect(calls).toHaveCount(2);
    await expect(calls.first()).toHaveAttribute('data-status', 'approved');
    await expect(calls.last()).toHaveAttribute('data-status', 'waiting');
    await page.screenshot({ path: screenshotPath('tools-second-call') });

    await card.getByTestId('tool-reason').fill('not that file');
    await card.getByTestId('tool-reject').click();

    // Both calls in the transcript, in order, each with its answer; the rejected one is an error the model was told.
    await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_waiting');
    await expect(calls).toHaveCount(2);
    await expect(calls.first()).toHaveAttribute('data-status', 'approved');
    await expect(calls.first().getByTestId('tool-call-arguments')).toContainText('"path": "one.md"');
    await expect(calls.first().getByTestId('tool-call-result')).toContainText('created one.md');
    await expect(calls.first()).not.toHaveAttribute('data-error', 'true');
    await expect(calls.last()).toHaveAttribute('data-status', 'rejected');
    await expect(calls.last()).toHaveAttribute('data-error', 'true');
    await expect(calls.last().getByTestId('tool-call-arguments')).toContainText('"path": "two.md"');
    await expect(calls.last().getByTestId('tool-call-status')).toHaveText('Rejected by the API token: not run');
    await expect(calls.last().getByTestId('tool-call-result')).toContainText(
      'Not run. A person rejected this call: not that file',
    );
    await expect(calls.last().getByTestId('tool-call-result')).toContainText('Error');
    await expect(page.getByTestId('transcript-intake')).toContainText(`Wrote one of the two ${marker}.`);
    expect(await exists(path.join(folder, 'two.md'))).toBe(false);
    await calls.first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('tools-two-calls-decided') });
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
});

test('a write allowed for the rest of the thread: the next write of the turn runs without asking', async ({ page }) => {
  const marker = `grant-${randomUUID().slice(0, 8)}`;
  const folder = await projectFolder();
  try {
    await scriptToolTurns([[writeFile('a.md', `a ${marker}`), writeFile('b.md', `b ${marker}`)]]);
    await script(words(`Wrote both ${marker}.`));
    await startWriterRun(page, folder, `Write a and b ${marker}`);

    const card = page.getByTestId('approval-card');
    await expect(card.getByTestId('tool-arguments')).toHaveValue(/"path": "a.md"/);
    await card.getByRole('checkbox', { name: /also allow project.write_file for the rest of this thread/ }).check();
    await card.getByTestId('tool-approve').click();

    // Nobody is asked about the second write: it ran under the grant, and the run went on to its gate.
    await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_waiting');
    const calls = page.getByTestId('transcript-tool-call');
    await expect(calls).toHaveCount(2);
    await expect(calls.first().getByTestId('tool-call-status')).toHaveText('Approved by the API token; ran');
    await expect(calls.last().getByTestId('tool-call-status')).toHaveText('Ran (granted for the thread)');
    expect(await fs.readFile(path.join(folder, 'b.md'), 'utf8')).toBe(`b ${marker}`);
    await calls.first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('tools-granted-for-thread') });

    // The State tab shows the grant, who gave it, and takes it back: the tool's next calls ask again.
    await page.getByTestId('tab-state').click();
    const grant = page.getByTestId('tool-grant');
    await expect(grant).toHaveCount(1);
    await expect(grant).toContainText('project.write_file');
    await expect(grant).toContainText('by the API token');
    await page.getByTestId('tool-grants').screenshot({ path: screenshotPath('tools-grant-listed') });
    await grant.getByRole('button', { name: 'Revoke project.write_file' }).click();
    await page.getByTestId('grant-revoke-confirm').click();
    await expect(grant).toHaveCount(0);
    await expect(page.getByTestId('tool-grant-revoked')).toContainText('revoked by the API token');
    const threadId = await page.getByTestId('state-thread').locator('[data-id]').getAttribute('data-id');
    const stored = (await (await api(`/threads/${threadId}/tool-grants`)).json()) as { revoked_at: string | null }[];
    expect(stored).toEqual([expect.objectContaining({ revoked_at: expect.any(String) })]);
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
});
