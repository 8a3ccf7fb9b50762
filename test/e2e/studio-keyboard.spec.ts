import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import {
  api,
  completeRun,
  expect,
  fromHeader,
  openStudio,
  phase,
  screenshotPath,
  script,
  startRun,
  test,
  words,
} from './studio.fixtures';

/** The element that has the keyboard's focus, by its test id (or its tag, when it has none). */
const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    return el?.dataset.testid ?? el?.id ?? el?.tagName ?? null;
  });

test('keyboard only: a run is started and approved in under 15 keys, from the skip link on', async ({ page }) => {
  await openStudio(page);
  // From a fresh page (the agent chosen stays chosen): the keyboard starts at the top.
  await page.reload();
  await expect(phase(page, 'intake')).toBeVisible();
  let keys = 0;
  const press = async (key: string) => {
    keys++;
    await page.keyboard.press(key);
  };

  // The first stop of the page is the skip link, and it leads to the message box.
  await press('Tab');
  expect(await focused(page)).toBe('skip-to-message');
  await expect(page.getByTestId('skip-to-message')).toBeInViewport();
  await press('Enter');
  expect(await focused(page)).toBe('run-message');

  await script(words('The rename is safe; ship it.'));
  for (const key of 'Go') await press(key);
  await press('Control+Enter');
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');

  // Alt+A: to the decision waiting; Enter approves; focus stays with the run, on its status.
  await script(words('Published.'));
  await press('Alt+A');
  expect(await focused(page)).toBe('gate-approve');
  await press('Enter');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  expect(await focused(page)).toBe('run-status');
  expect(keys).toBeLessThan(15);
  await page.screenshot({ path: screenshotPath('keyboard-approved') });
});

test('keyboard only: the inbox opens onto its first Approve, and Open the thread leaves focus on the run', async ({
  page,
}) => {
  const marker = randomUUID().slice(0, 8);
  await openStudio(page);
  await script(words(`Analysis ${marker}: ship it.`));
  await startRun(page, `Review: keyboard inbox ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.reload();
  await expect(phase(page, 'intake')).toBeVisible();
  await expect(page.getByTestId('inbox-count')).toHaveText(/^[1-9]\d*$/);

  // From the header's Approvals entry: Enter opens the inbox, and the first decision is the next key at most.
  let keys = 0;
  await page.getByTestId('inbox-open').focus();
  keys++;
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('inbox')).toBeVisible();
  while ((await focused(page)) !== 'gate-approve' && keys < 10) {
    keys++;
    await page.keyboard.press('Tab');
  }
  expect(await focused(page)).toBe('gate-approve');
  expect(keys).toBeLessThan(10);
  await page.screenshot({ path: screenshotPath('keyboard-inbox-opened') });

  // Alt+A from anywhere lands on that Approve too, not on the inbox's heading.
  await page.getByTestId('inbox-refresh').focus();
  await page.keyboard.press('Alt+A');
  await expect.poll(() => focused(page)).toBe('gate-approve');

  // Open the thread: the run shows, and focus is on its decision, not dropped to the page.
  const item = page.getByTestId('inbox-item').filter({ hasText: marker });
  await item.getByTestId('inbox-open-thread').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('inbox')).toBeHidden();
  await expect.poll(() => focused(page)).toBe('gate-approve');
  await expect(page.getByTestId('approval-card').getByTestId('gate-approve')).toBeFocused();
});

test('each canvas phase is one Tab stop, and every control has a name', async ({ page }) => {
  await openStudio(page);
  await phase(page, 'intake').focus();
  await page.keyboard.press('Tab');
  const next = await focused(page);
  expect(next).toMatch(/^phase-/);
  expect(next).not.toBe('phase-intake');
  for (const name of ['Message', 'Model', 'Project path'])
    await expect(page.getByLabel(name, { exact: true })).toBeVisible();
});

test('Escape closes every form, menu and dialog, and focus lands on the next sensible control', async ({ page }) => {
  await openStudio(page);
  await script(words('Looks right to me.'));
  await startRun(page, 'Review: forms to close');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByLabel('Reason (optional)', { exact: true })).toBeVisible();

  // Edit…: focus in the text; Escape: the form closes, focus back on Edit….
  await page.getByTestId('gate-edit').click();
  expect(await focused(page)).toBe('gate-edit-text');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('gate-edit-form')).toBeHidden();
  expect(await focused(page)).toBe('gate-edit');

  // Respond…: focus in the feedback; Cancel and Escape both give focus back to Respond….
  await page.getByTestId('gate-respond').click();
  expect(await focused(page)).toBe('gate-response');
  await page.getByTestId('gate-respond-cancel').click();
  expect(await focused(page)).toBe('gate-respond');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('gate-respond-form')).toBeHidden();
  expect(await focused(page)).toBe('gate-respond');

  // Reject and stop… asks first; Escape keeps the gate waiting.
  await page.getByTestId('gate-reject').click();
  await expect(page.getByTestId('gate-reject-confirm')).toContainText('cannot be undone');
  expect(await focused(page)).toBe('gate-reject-cancel');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('gate-reject-confirm')).toBeHidden();
  expect(await focused(page)).toBe('gate-reject');

  // The More menu: arrows move, Escape closes it on its button.
  await page.getByTestId('header-more').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('header-menu')).toBeVisible();
  expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('menuitem');
  await page.keyboard.press('End');
  expect(await focused(page)).toBe('sign-out');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('header-menu')).toBeHidden();
  expect(await focused(page)).toBe('header-more');

  // Settings, from the menu: Escape closes it, focus on More again.
  await page.keyboard.press('ArrowDown');
  await page.getByTestId('settings-open').press('Enter');
  await expect(page.getByTestId('settings')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('settings')).toBeHidden();
  expect(await focused(page)).toBe('header-more');

  // The queue's Reset asks first; Escape leaves the queue as it was, focus on Reset.
  await page.getByTestId('queue-reset').click();
  await expect(page.getByTestId('confirm-dialog')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('confirm-dialog')).toBeHidden();
  expect(await focused(page)).toBe('queue-reset');
  await expect(page.getByTestId('toast')).toHaveCount(0);

  // The inbox: Escape goes back to the studio, to the message box.
  await page.getByTestId('inbox-open').click();
  await expect(page.getByTestId('inbox')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('inbox')).toBeHidden();
  expect(await focused(page)).toBe('run-message');

  // Approving in the inbox: the item goes, focus on what the decision did.
  await page.getByTestId('inbox-open').click();
  const item = page.getByTestId('inbox-item').filter({ hasText: 'Review: forms to close' });
  await script(words('Published.'));
  await item.getByTestId('gate-approve').click();
  await expect(item).toBeHidden();
  // Focus moves once the list has been read again (the decided item may go from the screen before that).
  await expect.poll(() => focused(page)).toMatch(/^(inbox-notice|gate-approve|tool-approve)$/);
  await page.screenshot({ path: screenshotPath('keyboard-inbox-approved') });
});

test('actions that are hard to take back ask first or offer Undo; an empty Run says what is missing', async ({
  page,
}) => {
  const [team] = (await (await api('/teams')).json()) as { id: string }[];
  const created = await api('/projects', { method: 'POST', json: { name: 'Undo here', parent_id: team!.id } });
  const project = (await created.json()) as { id: string };
  await openStudio(page);

  // An empty Run: said next to the box, and focus goes there.
  await page.getByTestId('run-submit').click();
  await expect(page.getByTestId('run-empty-hint')).toHaveText('Type a message first');
  expect(await focused(page)).toBe('run-message');
  await page.getByTestId('run-message').fill('now something');
  await expect(page.getByTestId('run-empty-hint')).toHaveText('');

  // Reset: a question, then a toast with what it did.
  await page.getByTestId('queue-reset').click();
  await expect(page.getByTestId('confirm-dialog')).toContainText('every server');
  await page.getByTestId('confirm-ok').click();
  await expect(page.getByTestId('toast')).toContainText('Queue reset: 0/1 busy, 0 waiting');

  // Use the organisation's: done at once, with Undo in a toast that restores the project's own configuration.
  await page.getByTestId('scope-project').selectOption(project.id);
  await phase(page, 'intake').click();
  await page.getByTestId('tab-phase').click();
  await page.getByTestId('config-notes').fill('the project keeps its own note');
  await page.getByTestId('config-save').click();
  await expect(page.getByTestId('config-saved')).toBeVisible();
  await page.getByTestId('config-use-organisation').click();
  await expect(page.getByTestId('config-notes')).toHaveValue('');
  const toast = page.getByTestId('toast').filter({ hasText: "organisation's configuration" });
  await expect(toast).toBeVisible();
  await toast.getByTestId('toast-action').click();
  await expect(page.getByTestId('config-notes')).toHaveValue('the project keeps its own note');
  await expect(page.getByTestId('config-use-organisation')).toBeVisible();
  await page.screenshot({ path: screenshotPath('undo-organisation') });
});

test("Escape closes the phase configuration, the fork form, a schedule's history and a question in Settings, onto what opened each", async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await openStudio(page, 'repo-summary');

  // A phase's configuration: opened from its card, closed by Escape (nothing saved) with focus back on the card.
  await phase(page, 'dispatch').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('phase-config')).toBeVisible();
  await page.getByTestId('config-notes').fill('not kept');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('phase-config')).toBeHidden();
  expect(await focused(page)).toBe('phase-dispatch');
  await expect(phase(page, 'dispatch')).not.toHaveAttribute('data-selected', 'true');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('config-notes')).toHaveValue('');

  // The fork form: focus in its message; Escape closes it onto Fork from here.
  await completeRun(page, 'Summarise before forking', 'Summed up.');
  await page.getByTestId('tab-history').click();
  await page.getByTestId('history-checkpoint').first().click();
  await page.getByTestId('fork-open').click();
  expect(await focused(page)).toBe('fork-message');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('fork-form')).toBeHidden();
  expect(await focused(page)).toBe('fork-open');

  // A schedule's history: Escape closes it onto its button and the view stays; Escape again leaves the view.
  const marker = randomUUID().slice(0, 8);
  const made = await api(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
    method: 'POST',
    json: { agent: 'repo-summary', cron: '0 6 * * *', timezone: 'UTC', message: `Escape ${marker}` },
  });
  const schedule = (await made.json()) as { id: string };
  try {
    await page.getByTestId('schedules-open').click();
    const item = page.getByTestId('schedule-item').filter({ hasText: `Escape ${marker}` });
    await item.getByTestId('schedule-history').click();
    await expect(item.getByTestId('schedule-fires')).toBeVisible();
    await page.keyboard.press('Escape');
    await expect(item.getByTestId('schedule-fires')).toBeHidden();
    await expect(page.getByTestId('schedules-view')).toBeVisible();
    expect(await focused(page)).toBe('schedule-history');
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('schedules-view')).toBeHidden();
  } finally {
    await api(`/schedules/${schedule.id}`, { method: 'DELETE' });
  }

  // Settings: revoking a token asks first, with focus on Cancel; Escape answers the question and leaves Settings open.
  const token = await api('/me/tokens', { method: 'POST', json: { name: `Escape ${marker}` } });
  expect(token.status).toBe(201);
  await fromHeader(page, 'settings-open');
  const settings = page.getByTestId('settings');
  await settings.getByRole('button', { name: `Revoke Escape ${marker}` }).click();
  await expect(settings.getByTestId('token-revoke-confirm')).toBeVisible();
  expect(await focused(page)).toBe('token-revoke-cancel');
  await page.keyboard.press('Escape');
  await expect(settings.getByTestId('token-revoke-confirm')).toBeHidden();
  await expect(settings).toBeVisible();
  await expect(settings.getByRole('button', { name: `Revoke Escape ${marker}` })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(settings).toBeHidden();
});

test('a toast stays while the pointer is on it or focus is in it, and leaves 10 s after both have left', async ({
  page,
}) => {
  // The studio's clock is the test's: ten seconds pass when the test says so.
  await page.clock.install();
  const [team] = (await (await api('/teams')).json()) as { id: string }[];
  const created = await api('/projects', { method: 'POST', json: { name: 'Toasts here', parent_id: team!.id } });
  const project = (await created.json()) as { id: string };
  const saved = await api(`/agents/change-review/nodes/intake/config?project_id=${project.id}`, {
    method: 'PUT',
    json: { instructions_override: null, classification_labels: null, routing_overrides: [], notes: 'its own note' },
  });
  expect(saved.status).toBe(200);
  await openStudio(page);
  await page.getByTestId('scope-project').selectOption(project.id);
  await phase(page, 'intake').click();
  await page.getByTestId('tab-phase').click();
  await expect(page.getByTestId('config-notes')).toHaveValue('its own note');

  // Focus on Undo: the toast stays however long the person takes, and Undo still works.
  await page.getByTestId('config-use-organisation').click();
  const undo = page.getByTestId('toast').filter({ hasText: "organisation's configuration" });
  await undo.getByTestId('toast-action').focus();
  await page.clock.fastForward(30_000);
  await expect(undo).toBeVisible();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('config-notes')).toHaveValue('its own note');

  // The pointer on a toast holds it too; 10 s after it leaves, the toast goes.
  const undone = page.getByTestId('toast').filter({ hasText: "project's own configuration again" });
  await undone.hover();
  await page.clock.fastForward(30_000);
  await expect(undone).toBeVisible();
  await page.mouse.move(5, 5);
  await page.clock.fastForward(9_000);
  await expect(undone).toBeVisible();
  await page.clock.fastForward(2_000);
  await expect(undone).toBeHidden();

  // Focus leaving a toast starts its 10 s again.
  await page.getByTestId('config-use-organisation').click();
  await undo.getByTestId('toast-close').focus();
  await page.clock.fastForward(30_000);
  await expect(undo).toBeVisible();
  await page.getByTestId('run-message').focus();
  await page.clock.fastForward(9_000);
  await expect(undo).toBeVisible();
  await page.clock.fastForward(2_000);
  await expect(undo).toBeHidden();
});
