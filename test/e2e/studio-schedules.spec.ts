import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { SignJWT } from 'jose';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import {
  api,
  expect,
  openStudio,
  screenshotPath as shot,
  script,
  sql,
  test,
  words,
  fromHeader,
} from './studio.fixtures';

/**
 * The Schedules view: a schedule made in the form (with the next times the server reads from the cron), run now, its
 * history with a refusal and a way into the run's thread, paused and resumed, changed and deleted; a schedule whose
 * maker lost her role pauses and says why; and the view at 390 px wide, with an accessibility check.
 */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

async function violations(page: Page): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page })
    .include('[data-testid="schedules-view"]')
    .withTags(WCAG_21_AA)
    .analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

/** Every schedule of the default project goes before each test: each starts from an empty view. */
test.beforeEach(async () => {
  await sql(`DELETE FROM svc_schedules WHERE project_id = $1`, [DEFAULT_PROJECT_ID]);
});

test('a schedule is made in the form, run now, paused, resumed, changed and deleted; its history opens the run', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await openStudio(page, 'repo-summary');
  await page.getByTestId('schedules-open').click();
  await expect(page.getByTestId('schedules-empty')).toBeVisible();

  // Escape closes the form, and the Schedules view stays.
  await page.getByTestId('schedule-new').click();
  await page.getByTestId('schedule-form').getByLabel('Time zone').press('Escape');
  await expect(page.getByTestId('schedule-form')).toBeHidden();
  await expect(page.getByTestId('schedules-empty')).toBeVisible();

  await page.getByTestId('schedule-new').click();
  const form = page.getByTestId('schedule-form');
  await form.getByLabel('Agent or command').selectOption('repo-summary');
  await form.getByLabel('Cron (minute hour day month weekday)').fill('30 2 * * *');
  await form.getByLabel('Time zone').fill('America/New_York');
  // The server reads the cron: three times, at 02:30 (or 03:00 on the night 02:30 does not exist), shown in the
  // studio's one absolute format, in the schedule's zone.
  const inNewYork = String.raw`\w{3}, \w{3} \d{1,2}, \d{4}, 0[23]:[03]0:00 E[SD]T`;
  await expect(form.getByTestId('schedule-preview')).toHaveText(
    new RegExp(`^Next: ${inNewYork} · ${inNewYork} · ${inNewYork}$`),
  );
  await form.getByLabel('Cron (minute hour day month weekday)').fill('30 2 * *');
  await expect(form.getByTestId('schedule-preview')).toContainText('cron:');
  await form.getByLabel('Cron (minute hour day month weekday)').fill('30 2 * * *');
  await form.getByLabel('Message', { exact: true }).fill('Summarise what changed overnight');
  await form.getByLabel('Missed while no server ran').selectOption('none');
  await expect(form.getByTestId('schedule-preview')).toContainText('Next:');
  await page.screenshot({ path: shot('schedules-form') });
  await form.getByRole('button', { name: 'Create schedule' }).click();

  const item = page.getByTestId('schedule-item');
  await expect(item).toHaveCount(1);
  await expect(item.getByTestId('schedule-active')).toBeVisible();
  await expect(item.getByTestId('schedule-next')).toContainText('Next:');
  await expect(item).toContainText('Runs as the API token');
  await expect(item).toContainText('missed runs: none');

  await script(words('Three commits, all tests green.'));
  await item.getByRole('button', { name: 'Run now: repo-summary at 30 2 * * *' }).click();
  await expect(page.getByTestId('schedules-notice')).toHaveText('Run of repo-summary started.');
  await item.getByRole('button', { name: 'History: repo-summary at 30 2 * * *' }).click();
  const fire = item.getByTestId('schedule-fire').first();
  await expect(fire).toHaveAttribute('data-outcome', 'started');
  await expect(fire).toContainText('run now by the API token');
  await expect(fire).toContainText(/run (running|completed)/);

  await item.getByRole('button', { name: 'Pause: repo-summary at 30 2 * * *' }).click();
  await expect(item.getByTestId('schedule-paused')).toBeVisible();
  await expect(item.getByTestId('schedule-paused-reason')).toHaveText('Paused by api-token.');
  await expect(item.getByTestId('schedule-next')).toHaveCount(0);
  await page.screenshot({ path: shot('schedules-paused') });
  await item.getByRole('button', { name: 'Resume: repo-summary at 30 2 * * *' }).click();
  await expect(item.getByTestId('schedule-active')).toBeVisible();

  await item.getByRole('button', { name: 'Edit: repo-summary at 30 2 * * *' }).click();
  await page.getByTestId('schedule-form').getByLabel('Cron (minute hour day month weekday)').fill('0 9 * * 1-5');
  await page.getByTestId('schedule-form').getByRole('button', { name: 'Save changes' }).click();
  await expect(item.getByTestId('schedule-when')).toHaveText('0 9 * * 1-5');

  // Its run's thread opens in the studio, with the run's output.
  await expect(fire).toContainText('run completed');
  await item.getByTestId('schedule-fire-open').first().click();
  await expect(page.getByTestId('schedules-view')).toBeHidden();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');

  await page.getByTestId('schedules-open').click();
  page.once('dialog', (dialog) => void dialog.dismiss());
  await item.getByRole('button', { name: 'Delete: repo-summary at 0 9 * * 1-5' }).click();
  await expect(item).toHaveCount(1);
  page.once('dialog', (dialog) => {
    expect(dialog.message()).toContain('Delete the schedule of repo-summary at 0 9 * * 1-5?');
    void dialog.accept();
  });
  await item.getByRole('button', { name: 'Delete: repo-summary at 0 9 * * 1-5' }).click();
  await expect(item).toHaveCount(0);
  await expect(page.getByTestId('schedules-notice')).toHaveText('Schedule of repo-summary deleted.');
});

test('a refused fire says why, and a schedule whose maker lost her role is paused with the reason', async ({
  page,
}) => {
  // A thread whose run waits at its gate: a schedule that continues it is refused until the gate is decided.
  await script(words('Looks fine to me.'));
  const started = await api('/agents/change-review/runs', { method: 'POST', json: { message: 'to the gate' } });
  const { thread_id: threadId, run_id: runId } = (await started.json()) as { thread_id: string; run_id: string };
  await expect
    .poll(async () => ((await (await api(`/runs/${runId}`)).json()) as { status: string }).status)
    .toBe('waiting_approval');
  const continuing = await api(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
    method: 'POST',
    json: {
      agent: 'change-review',
      cron: '0 8 * * *',
      timezone: 'Europe/Paris',
      message: 'again',
      thread_id: threadId,
    },
  });
  expect(continuing.status).toBe(201);

  // Ada, a member, schedules a run; then her role on the project is taken away.
  const ada = randomUUID();
  await sql(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', $2, 'Ada')`, [ada, ada]);
  await sql(`INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'project', $2, 'member')`, [
    ada,
    DEFAULT_PROJECT_ID,
  ]);
  const adaToken = await new SignJWT({ name: 'Ada' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(ada)
    .setIssuer('agent-workflow-service')
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(process.env.E2E_SESSION_SECRET));
  const byAda = await api(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adaToken}` },
    json: { agent: 'repo-summary', cron: '0 7 * * 1', timezone: 'Europe/London', message: "Ada's weekly summary" },
  });
  expect(byAda.status).toBe(201);
  await sql(`UPDATE svc_memberships SET role = 'viewer' WHERE user_id = $1`, [ada]);

  await page.setViewportSize({ width: 1440, height: 900 });
  await openStudio(page, 'repo-summary');
  await page.getByTestId('schedules-open').click();
  const items = page.getByTestId('schedule-item');
  await expect(items).toHaveCount(2);

  const refused = items.filter({ hasText: 'change-review' });
  await refused.getByRole('button', { name: 'Run now: change-review at 0 8 * * *' }).click();
  await expect(page.getByTestId('schedules-notice')).toContainText(
    `Run of change-review refused: thread ${threadId} has run ${runId} waiting for approval`,
  );
  await refused.getByRole('button', { name: 'History: change-review at 0 8 * * *' }).click();
  await expect(refused.getByTestId('schedule-fire').first()).toHaveAttribute('data-outcome', 'refused');
  await expect(refused.getByTestId('schedule-fire-reason').first()).toContainText('waiting for approval');
  await expect(refused.getByTestId('schedule-active')).toBeVisible();
  await page.screenshot({ path: shot('schedules-refused') });

  const adas = items.filter({ hasText: "Ada's weekly summary" });
  await expect(adas).toContainText('Runs as Ada');
  await adas.getByRole('button', { name: 'Run now: repo-summary at 0 7 * * 1' }).click();
  const reason =
    'Paused: Ada no longer holds the member role (or higher) on project Default project (her role there is viewer now).';
  await expect(adas.getByTestId('schedule-paused-reason')).toHaveText(reason);
  await expect(adas.getByTestId('schedule-paused')).toBeVisible();
  // Resuming cannot bring her rights back: the view says so.
  await adas.getByRole('button', { name: 'Resume: repo-summary at 0 7 * * 1' }).click();
  await expect(page.getByTestId('schedules-notice')).toContainText('cannot run as Ada');
  await page.screenshot({ path: shot('schedules-lost-role') });
  expect(await violations(page)).toEqual([]);
});

test('the view works at 390 px wide', async ({ page }) => {
  await api(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
    method: 'POST',
    json: {
      agent: 'repo-summary',
      cron: '15 6 * * *',
      timezone: 'Asia/Tokyo',
      message: 'Morning summary for the team',
    },
  });
  await page.setViewportSize({ width: 390, height: 844 });
  await openStudio(page, 'repo-summary');
  // On a phone the header keeps the views in its More menu.
  await fromHeader(page, 'schedules-open');
  const view = page.getByTestId('schedules-view');
  await expect(view.getByTestId('schedule-item')).toHaveCount(1);
  // The view takes the width of the window, and nothing in it runs past its edge.
  const box = (await view.boundingBox())!;
  expect(box.x).toBe(0);
  expect(box.width).toBeLessThanOrEqual(390);
  expect(await view.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
  await page.screenshot({ path: shot('schedules-390-list') });

  await view.getByRole('button', { name: 'New schedule' }).click();
  const form = view.getByTestId('schedule-form');
  await form.getByLabel('Message', { exact: true }).fill('From a phone');
  await expect(form.getByTestId('schedule-preview')).toContainText('Next:');
  expect(await view.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
  await page.screenshot({ path: shot('schedules-390-form') });
  await form.getByRole('button', { name: 'Create schedule' }).click();
  await expect(view.getByTestId('schedule-item')).toHaveCount(2);
  expect(await violations(page)).toEqual([]);
});

test('a schedule is made from a preset and read in plain words; words typed as a cron get the fields to give', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1024, height: 768 });
  await openStudio(page, 'repo-summary');
  await fromHeader(page, 'schedules-open');
  await page.getByTestId('schedule-new').click();
  const form = page.getByTestId('schedule-form');
  const cron = form.getByLabel('Cron (minute hour day month weekday)');
  await form.getByLabel('Repeats').selectOption({ label: 'Every 5 minutes' });
  await expect(cron).toHaveValue('*/5 * * * *');
  await expect(form.getByTestId('schedule-reading')).toHaveText('Every 5 minutes.');
  await expect(form.getByTestId('schedule-preview')).toContainText('Next:');

  // Words where the cron goes: the answer says which five fields to give, and the preset is custom.
  await cron.fill('every 5 minutes');
  await expect(form.getByLabel('Repeats')).toHaveValue('custom');
  await expect(form.getByTestId('schedule-preview')).toHaveText(
    'cron: "every 5 minutes" is not five fields: give minute hour day-of-month month day-of-week, e.g. ' +
      '"*/5 * * * *" for every 5 minutes, or "0 9 * * 1-5" for weekdays at 09:00',
  );
  await expect(form.getByTestId('schedule-reading')).toBeHidden();

  // A cron written by hand that is a preset reads as it.
  await cron.fill('0 9 * * 1-5');
  await expect(form.getByLabel('Repeats')).toHaveValue('0 9 * * 1-5');
  await expect(form.getByTestId('schedule-reading')).toHaveText('At 09:00, Monday through Friday.');
  await form.getByLabel('Message', { exact: true }).fill('Summarise the day before');
  for (const [width, height] of [
    [1440, 900],
    [1024, 768],
    [390, 844],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: shot(`schedules-preset-${width}`) });
  }
  await page.setViewportSize({ width: 1024, height: 768 });
  await form.getByRole('button', { name: 'Create schedule' }).click();
  const item = page.getByTestId('schedule-item');
  await expect(item).toHaveCount(1);
  await expect(item.getByTestId('schedule-when')).toHaveText('0 9 * * 1-5');
  await expect(item.getByTestId('schedule-reading')).toHaveText('At 09:00, Monday through Friday');
  expect(await violations(page)).toEqual([]);
});

test('the form warns when the default model its runs would use is not on the runtime', async ({ page }) => {
  const runtime = (body: unknown) =>
    fetch(`${process.env.E2E_MODEL_URL}/__script`, { method: 'POST', body: JSON.stringify(body) });
  await runtime({ models: ['other-model', 'llama3.2'] });
  try {
    await page.setViewportSize({ width: 1440, height: 900 });
    await openStudio(page, 'repo-summary');
    await page.getByTestId('schedules-open').click();
    await page.getByTestId('schedule-new').click();
    const form = page.getByTestId('schedule-form');
    const warning = form.getByTestId('schedule-default-model-missing');
    await expect(warning).toContainText('fake-model');
    await expect(warning).toContainText('Its runs would fail: choose a model, or pull the default in Models.');
    await page.screenshot({ path: shot('schedules-default-model-missing') });
    // A model chosen for the schedule: its runs do not use the default.
    await form.getByTestId('schedule-model').selectOption('llama3.2');
    await expect(warning).toHaveCount(0);
  } finally {
    await runtime({ models: ['fake-model', 'llama3.2'] });
  }
});
