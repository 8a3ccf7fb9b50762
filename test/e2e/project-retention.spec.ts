import AxeBuilder from '@axe-core/playwright';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { randomUUID } from 'node:crypto';
import {
  api,
  baseUrl,
  expect,
  openStudio,
  screenshotPath,
  signInByLink,
  sql,
  test,
  fromHeader,
} from './studio.fixtures';
import { signSession } from '../helpers/sessions';

const retention = () => api(`/projects/${DEFAULT_PROJECT_ID}/retention`);

test.afterEach(async () => {
  // Back to the defaults: the other specs' threads are kept, whole.
  await api(`/projects/${DEFAULT_PROJECT_ID}/retention`, {
    method: 'PUT',
    json: { keep_finished_threads_days: null, prune_checkpoints: false },
  });
});

test("Settings → Retention: a project's owner keeps finished threads 90 days and prunes checkpoints, at 390 px too", async ({
  page,
}) => {
  await openStudio(page);
  await page.getByTestId('scope-project').selectOption(DEFAULT_PROJECT_ID);
  await fromHeader(page, 'settings-open');
  const dialog = page.getByRole('dialog', { name: 'Settings' });
  const section = dialog.getByRole('region', { name: /Retention of/ });
  const days = section.getByLabel('Delete finished threads after (days)');
  const prune = section.getByLabel('Prune old checkpoints of kept threads');
  await expect(days).toHaveValue('');
  await expect(days).toHaveAttribute('placeholder', 'Keep forever');
  await expect(prune).not.toBeChecked();
  const save = section.getByRole('button', { name: 'Save retention' });
  await expect(save).toBeDisabled();

  await days.fill('0');
  await expect(section).toContainText('Whole days, 1 to 36500, or empty.');
  await expect(save).toBeDisabled();
  await days.fill('90');
  await prune.check();
  await save.click();
  await expect(section.getByRole('status')).toHaveText('Saved');
  expect(await (await retention()).json()).toMatchObject({ keep_finished_threads_days: 90, prune_checkpoints: true });
  await dialog.screenshot({ path: screenshotPath('project-retention') });
  const axe = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);

  // On a phone's width the dialog and its fields fit, and what was saved reads back.
  await dialog.getByRole('button', { name: 'Close' }).click();
  await page.setViewportSize({ width: 390, height: 844 });
  await fromHeader(page, 'settings-open');
  await expect(days).toHaveValue('90');
  await expect(prune).toBeChecked();
  for (const element of [dialog, days, save]) {
    const box = (await element.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
  }
  await dialog.screenshot({ path: screenshotPath('project-retention-390') });

  // Emptied, the threads are kept forever again.
  await days.fill('');
  await save.click();
  await expect(section.getByRole('status')).toHaveText('Saved');
  expect(await (await retention()).json()).toMatchObject({ keep_finished_threads_days: null, prune_checkpoints: true });
});

test("a project's viewer reads its retention and cannot change it", async ({ page }) => {
  await api(`/projects/${DEFAULT_PROJECT_ID}/retention`, {
    method: 'PUT',
    json: { keep_finished_threads_days: 30, prune_checkpoints: false },
  });
  const id = randomUUID();
  await sql(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', $2, 'Vera Viewer')`, [id, id]);
  await sql(`INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'project', $2, 'viewer')`, [
    id,
    DEFAULT_PROJECT_ID,
  ]);
  const session = await signSession(id, process.env.E2E_SESSION_SECRET!);
  await signInByLink(page, `${baseUrl()}/ui#token=${session}`, page.getByTestId('scope-project'));
  await page.getByTestId('scope-project').selectOption(DEFAULT_PROJECT_ID);
  await fromHeader(page, 'settings-open');
  const section = page.getByRole('dialog', { name: 'Settings' }).getByRole('region', { name: /Retention of/ });
  await expect(section.getByLabel('Delete finished threads after (days)')).toHaveValue('30');
  await expect(section.getByLabel('Delete finished threads after (days)')).toBeDisabled();
  await expect(section.getByLabel('Prune old checkpoints of kept threads')).toBeDisabled();
  await expect(section).toContainText("Only the project's owners change these.");
  await expect(section.getByRole('button', { name: 'Save retention' })).toHaveCount(0);
});
