import AxeBuilder from '@axe-core/playwright';
import type { Locator, Page } from '@playwright/test';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import {
  api,
  expect,
  fromHeader,
  openStudio,
  phase,
  screenshotPath as shot,
  script,
  test,
  words,
} from './studio.fixtures';

/**
 * The Agents view: a built-in copied, its analysis prompt changed with a mistake that shows at its line as one types,
 * fixed, tried as a draft run that streams, saved with a note, changed and saved again, the two versions compared and
 * the first restored; a new agent from the template and an imported file; the view on a phone; and the Phase tab
 * saying that an instructions override replaces the phase's brief.
 */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const COPY = 'change-review-copy';

async function violations(page: Page): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page })
    .include('[data-testid="agents-view"]')
    .withTags(WCAG_21_AA)
    .analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

/** The copy an earlier attempt saved goes first: each test starts from the built-ins alone. */
test.beforeEach(async () => {
  await api(`/agents/${COPY}?project_id=${DEFAULT_PROJECT_ID}`, { method: 'DELETE' });
});

async function openAgents(page: Page): Promise<Locator> {
  await fromHeader(page, 'agents-open');
  const view = page.getByTestId('agents-view');
  await expect(view).toBeVisible();
  return view;
}

/** Saves the text in the editor with a note, and waits until the server has it as `version`. */
async function save(page: Page, note: string, version: number): Promise<void> {
  await page.getByTestId('agent-save').click();
  const dialog = page.getByTestId('save-note-dialog');
  await expect(dialog.getByLabel('Note: what changed, and why')).toBeFocused();
  await dialog.getByLabel('Note: what changed, and why').fill(note);
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('agents-notice')).toHaveText(`Saved ${COPY} as version ${version}.`);
  await expect(page.getByTestId('agent-editor-version')).toHaveText(`version ${version}`);
}

test('a copy of change-review: a mistake at its line, fixed, tried as a draft, saved twice, compared and restored', async ({
  page,
}) => {
  test.setTimeout(150_000);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openStudio(page);
  const view = await openAgents(page);

  const builtIn = view.locator('[data-testid="agent-row"][data-agent="change-review"]');
  await expect(builtIn.getByTestId('agent-origin')).toHaveText('built-in');
  await expect(builtIn.getByTestId('agent-version-badge')).toHaveText(/^[0-9a-f]{8}$/);
  await builtIn.getByRole('button', { name: 'Copy change-review' }).click();

  const editor = page.getByTestId('agent-editor');
  await expect(editor.getByTestId('agent-editor-title')).toHaveText(COPY);
  await expect(editor.getByTestId('agent-editor-title')).toBeFocused();
  await expect(editor.getByTestId('agent-beginning')).toContainText('a copy of change-review, not saved yet');
  const field = editor.getByLabel('Source');
  await expect(field).toHaveValue(new RegExp(`^---\\nname: ${COPY}\\n`));
  await expect(editor.getByTestId('source-valid')).toBeVisible();
  const graph = editor.getByTestId('agent-graph');
  await expect(graph.getByTestId('phase-gate')).toBeVisible();
  await expect(graph.getByTestId('agent-graph-phases')).toContainText('Review (model) → Approve publishing (gate)');

  // The analysis prompt changed, with a field the compiler does not know: the problem shows at its line.
  const copied = await field.inputValue();
  const mistaken = copied
    .replace('    name: Review\n', '    name: Review\n    prompt: also check for typos\n')
    .replace('Go through the change hunk by hunk;', 'Go through the change hunk by hunk, and check the spelling;');
  const line = mistaken.split('\n').indexOf('    prompt: also check for typos') + 1;
  await field.fill(mistaken);
  const problem = editor.getByTestId('source-problem');
  await expect(problem).toHaveText(`line ${line}: phases.analysis.prompt: unknown field`);
  await expect(editor.locator(`[data-testid="source-gutter"] [data-line="${line}"]`)).toHaveAttribute(
    'data-problem',
    'true',
  );
  await expect(editor.locator('[data-testid="source-gutter"] [data-problem]')).toHaveCount(1);
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('agent-save')).toBeDisabled();
  await expect(page.getByTestId('agent-try-why')).toContainText('Fix the problems first');
  await expect(graph.getByTestId('agent-graph-empty')).toBeVisible();
  // The problem takes the editor to its line.
  await problem.getByRole('button').click();
  await expect(field).toBeFocused();
  expect(await field.evaluate((el: HTMLTextAreaElement) => el.value.slice(el.selectionStart, el.selectionEnd))).toBe(
    '    prompt: also check for typos',
  );
  await page.screenshot({ path: shot('agents-editor-problem') });
  expect(await violations(page)).toEqual([]);

  // Fixed: the line goes, the problem and its mark too, and the graph is back.
  const fixed = mistaken.replace('    prompt: also check for typos\n', '');
  await field.fill(fixed);
  await expect(editor.getByTestId('source-valid')).toBeVisible();
  await expect(problem).toHaveCount(0);
  await expect(editor.locator('[data-testid="source-gutter"] [data-problem]')).toHaveCount(0);
  await expect(graph.getByTestId('phase-analysis')).toBeVisible();

  // Tried on a message before it is saved: a draft run, streamed here, stopping at the gate.
  await script(words('request-changes The loader misses a null check on line 12.'), 30);
  await editor.getByLabel('Message').fill('Review: the rename of the config loader');
  await editor.getByRole('button', { name: 'Try' }).click();
  const draft = editor.getByTestId('draft-run');
  await expect(draft.getByTestId('draft-badge')).toHaveText('Draft run');
  await expect(draft.getByTestId('draft-transcript')).toContainText('The loader misses');
  await expect(draft.getByTestId('draft-status')).toHaveText('Waiting for approval');
  await expect(draft.getByTestId('draft-transcript')).toContainText('misses a null check on line 12.');
  await expect(graph.getByTestId('phase-gate')).toHaveAttribute('data-state', 'gate_waiting');
  await page.screenshot({ path: shot('agents-draft-run') });
  // A draft is not one of the threads.
  const threads = (await (await api('/threads?limit=100')).json()) as { items: { agent: string }[] };
  expect(threads.items.some((t) => t.agent === COPY)).toBe(false);
  await draft.getByRole('button', { name: 'Reject' }).click();
  await expect(draft.getByTestId('draft-status')).toHaveText('Rejected');

  // Saved with a note, in the project: a stored agent at version 1.
  await save(page, 'First copy: the review checks the spelling too', 1);
  const stored = view.locator(`[data-testid="agent-row"][data-agent="${COPY}"]`);
  await expect(stored.getByTestId('agent-origin')).toHaveText('stored');
  await expect(stored.getByTestId('agent-version-badge')).toHaveText('v1');
  await expect(editor.getByTestId('agent-editor-origin')).toHaveText('stored');
  await expect(editor.getByTestId('agent-version')).toHaveCount(1);

  // Changed and saved again: version 2, and both in the history.
  const second = fixed.replace('and check the spelling;', 'and check the spelling and the grammar;');
  await field.fill(second);
  await expect(editor.getByTestId('agent-unsaved')).toBeVisible();
  await expect(editor.getByTestId('source-valid')).toBeVisible();
  await save(page, 'Grammar as well', 2);
  const versions = editor.getByTestId('agent-version');
  await expect(versions).toHaveCount(2);
  await expect(versions.nth(0).getByTestId('version-note')).toHaveText('Grammar as well');
  await expect(versions.nth(0).getByTestId('version-current')).toBeVisible();
  await expect(versions.nth(1).getByTestId('version-note')).toHaveText(
    'First copy: the review checks the spelling too',
  );
  await expect(versions.nth(1)).toContainText('by the API token');

  // The two compared: one line removed, one added, the rest the same.
  await editor.getByLabel('Compare version 1').check();
  await editor.getByLabel('Compare version 2').check();
  const diff = editor.getByTestId('source-diff');
  await expect(diff.getByTestId('diff-counts')).toHaveText('1 line added, 1 line removed');
  await expect(diff.locator('[data-kind="removed"]')).toContainText('and check the spelling;');
  await expect(diff.locator('[data-kind="added"]')).toContainText('and check the spelling and the grammar;');
  await expect(diff.getByTestId('diff-gap').first()).toHaveText(/⋯ \d+ unchanged lines/);
  await diff.scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('agents-history-diff') });
  expect(await violations(page)).toEqual([]);

  // The first restored: a third version with the first's text, in the editor too.
  await editor.getByRole('button', { name: 'Restore version 1' }).click();
  await expect(page.getByTestId('agents-notice')).toHaveText('Version 1 restored as version 3.');
  await expect(versions).toHaveCount(3);
  await expect(versions.nth(0).getByTestId('version-note')).toHaveText('restored version 1');
  await expect(field).toHaveValue(fixed);
  const [v1, v3] = await Promise.all(
    [1, 3].map(async (n) => {
      const res = await api(`/agents/${COPY}/versions/${n}?project_id=${DEFAULT_PROJECT_ID}`);
      return ((await res.json()) as { source: string }).source;
    }),
  );
  expect(v3).toBe(v1);
  expect(v1).toBe(fixed);

  // Exported as its .md file.
  const download = page.waitForEvent('download');
  await editor.getByRole('button', { name: 'Export .md' }).click();
  expect((await download).suggestedFilename()).toBe(`${COPY}.md`);

  // Deleted, after a question: it leaves the list.
  await editor.getByRole('button', { name: 'Delete' }).click();
  await page
    .getByRole('dialog', { name: `Delete ${COPY}?` })
    .getByRole('button', { name: 'Delete' })
    .click();
  await expect(page.getByTestId('agents-notice')).toHaveText(`${COPY} deleted.`);
  await expect(stored).toHaveCount(0);
  await expect(page.locator('#agents-title')).toBeFocused();
});

test('a new agent from the template, and an imported file whose problems show at their lines', async ({ page }) => {
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openStudio(page);
  const view = await openAgents(page);

  await view.getByRole('button', { name: 'New agent', exact: true }).click();
  const editor = page.getByTestId('agent-editor');
  await expect(editor.getByTestId('agent-beginning')).toContainText('from the template');
  await expect(editor.getByLabel('Source')).toHaveValue(/^---\nname: my-agent\n/);
  await expect(editor.getByTestId('source-valid')).toBeVisible();
  await expect(editor.getByTestId('agent-graph').getByTestId('phase-output')).toBeVisible();

  await view.getByTestId('agent-import-file').setInputFiles({
    name: 'imported-agent.md',
    mimeType: 'text/markdown',
    buffer: Buffer.from('---\nname: Imported Agent\ndescription: Says hello.\n---\n\nYou greet people.\n'),
  });
  await expect(editor.getByTestId('agent-beginning')).toContainText('imported from imported-agent.md');
  await expect(editor.getByTestId('source-problem')).toHaveText(
    'line 2: name: must be lowercase letters, digits and dashes',
  );
  await expect(editor.locator('[data-testid="source-gutter"] [data-line="2"]')).toHaveAttribute('data-problem', 'true');
  await editor
    .getByLabel('Source')
    .fill('---\nname: imported-agent\ndescription: Says hello.\n---\n\nYou greet people.\n');
  await expect(editor.getByTestId('source-valid')).toBeVisible();
  await expect(editor.getByTestId('agent-graph-phases')).toContainText('Intake (model) → Analysis (model)');

  // Changes that are not saved are not dropped without a question.
  await view.getByRole('button', { name: 'New agent', exact: true }).click();
  const question = page.getByRole('dialog', { name: 'Discard the changes to imported-agent?' });
  await question.getByRole('button', { name: 'Cancel' }).click();
  await expect(editor.getByLabel('Source')).toHaveValue(/^---\nname: imported-agent\n/);
  await view.getByRole('button', { name: 'New agent', exact: true }).click();
  await question.getByRole('button', { name: 'Discard and start a new agent' }).click();
  await expect(editor.getByLabel('Source')).toHaveValue(/^---\nname: my-agent\n/);
  await expect(editor.getByTestId('agent-editor-title')).toBeFocused();
});

test('on a phone the list and the editor stack: a built-in is read and tried without the page scrolling sideways', async ({
  page,
}) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await openStudio(page);
  const view = await openAgents(page);
  await view.getByTestId('agent-open-change-review').click();
  const editor = page.getByTestId('agent-editor');
  await expect(editor.getByTestId('agent-read-only')).toBeVisible();
  await expect(editor.getByLabel('Source')).toHaveAttribute('readonly', '');
  await expect(editor.getByTestId('agent-save')).toHaveCount(0);
  await expect(editor.getByTestId('source-valid')).toBeVisible();

  const list = (await view.getByTestId('agent-list').boundingBox())!;
  const box = (await editor.boundingBox())!;
  expect(box.y).toBeGreaterThanOrEqual(list.y + list.height);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  expect(box.x + box.width).toBeLessThanOrEqual(390);

  await script(words('approve Nothing to add.'));
  await editor.getByLabel('Message').fill('Review the last commit');
  await editor.getByRole('button', { name: 'Try' }).click();
  await expect(editor.getByTestId('draft-status')).toHaveText('Waiting for approval');
  await expect(editor.getByTestId('draft-transcript')).toContainText('Nothing to add.');
  await editor.getByTestId('draft-run').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('agents-phone-390'), fullPage: true });
  await editor.getByRole('button', { name: 'Reject' }).click();
  await expect(editor.getByTestId('draft-status')).toHaveText('Rejected');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
});

test("the Phase tab says that an instructions override replaces the phase's brief, and shows that brief", async ({
  page,
}) => {
  await page.setViewportSize({ width: 1500, height: 900 });
  await openStudio(page);
  await phase(page, 'analysis').click();
  const form = page.getByTestId('phase-config');
  const override = form.getByLabel('Instructions override');
  await expect(override).toHaveAccessibleDescription(/Replaces the phase's brief\./);
  await expect(form.getByTestId('config-brief')).toBeHidden();

  // Typing an override opens the brief it replaces, and says that the brief is no longer sent.
  await override.fill('Also check for typos.');
  await expect(form.getByTestId('config-brief')).toBeVisible();
  await expect(form.getByTestId('config-brief')).toContainText('Go through the change hunk by hunk;');
  await expect(form.getByTestId('config-brief')).toContainText('Expected output: The verdict label on the first line.');
  await expect(form.getByTestId('config-brief-dropped')).toHaveText(
    '⚠ With this override the brief above is not sent: the model gets only your text.',
  );
  await form.getByRole('button', { name: 'Put the brief before my text' }).click();
  await expect(override).toHaveValue(/^Go through the change hunk by hunk;[\s\S]*\n\nAlso check for typos\.$/);
  await expect(form.getByTestId('config-brief-dropped')).toHaveCount(0);
  await form.getByTestId('config-instructions-replaces').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('phase-override-replaces-brief') });
});
