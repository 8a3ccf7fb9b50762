import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import type { RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { freePort } from '../helpers/ports';
import { signSession } from '../helpers/sessions';
import type { ReceivedMail } from '../helpers/smtp-stand-in';
import {
  api,
  baseUrl,
  expect,
  fromHeader,
  openStudio,
  screenshotPath,
  script,
  signInByLink,
  sql,
  startRun,
  test,
  words,
} from './studio.fixtures';

/**
 * Mail as a place to decide stops, seen from the studio: the instance administrator (the API token) sets the mail
 * server in Settings (the real SMTP server of global-setup.ts, on loopback) and sends a test mail through it; the
 * default organisation's stops are mailed to a named address; a stop of its project says in the inbox where it was
 * mailed, and the mail arrives. The recipients are removed at the end whatever happens, so that the other specs' stops
 * are mailed to nobody.
 */

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the browser tests with npm run test:e2e`);
  return value;
};

/** The mails the SMTP stand-in received so far. */
async function mails(): Promise<ReceivedMail[]> {
  return (await (await fetch(env('E2E_SMTP_MAILS_URL'))).json()) as ReceivedMail[];
}

const axeViolations = async (page: Page, selector: string) =>
  (
    await new AxeBuilder({ page }).include(selector).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  ).violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);

/** A member of the default project, signed in with a session of her own in a browser of her own. */
async function member(page: Page, name: string): Promise<void> {
  const id = randomUUID();
  await sql(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', $2, $3)`, [id, id, name]);
  const granted = await api(`/projects/${DEFAULT_PROJECT_ID}/members/${id}`, {
    method: 'PUT',
    json: { role: 'member' },
  });
  expect(granted.status).toBe(200);
  const token = await signSession(id, env('E2E_SESSION_SECRET'), '1h', name);
  await signInByLink(page, `${baseUrl()}/ui#token=${token}`, page.getByTestId('user-name'));
  await expect(page.getByTestId('user-name')).toHaveText(name);
}

test('Settings → Mail: the mail server set and tested; the organisation mails its stops to an address; the inbox says so', async ({
  page,
  browser,
}) => {
  test.setTimeout(150_000);
  const suffix = randomUUID().slice(0, 6);
  const marker = `mail-${suffix}`;
  const smtpPort = Number(env('E2E_SMTP_PORT'));
  const opsAddress = `ops-${suffix}@example.test`;
  const reviewers = `reviewers-${suffix}@example.test`;
  let runId: string | null = null;
  const adaContext = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  try {
    // The instance administrator (the API token) opens Settings with the default organisation and project chosen.
    await openStudio(page);
    await page.getByTestId('scope-org').selectOption(DEFAULT_ORG_ID);
    await page.getByTestId('scope-project').selectOption(DEFAULT_PROJECT_ID);
    await fromHeader(page, 'settings-open');
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    const server = dialog.getByRole('region', { name: 'Mail server' });
    await expect(server.getByTestId('email-form')).toBeVisible();
    // Another spec may have set one already (the setting is the instance's); none is set by the time this one starts
    // on a fresh server.
    const before = await api('/settings/email');
    if (before.status === 404) await expect(server.getByTestId('email-none')).toBeVisible();

    const save = server.getByRole('button', { name: 'Save the mail server' });
    await expect(server.getByLabel('TLS from the start', { exact: true })).toHaveAccessibleDescription(
      'port 465; otherwise STARTTLS where offered',
    );
    // Where nothing listens: saved (the host resolves, and loopback is allowed here), but the test mail is refused.
    const closed = await freePort();
    await server.getByLabel('Host', { exact: true }).fill('127.0.0.1');
    await server.getByLabel('Port', { exact: true }).fill(String(closed));
    await server.getByLabel('TLS from the start', { exact: true }).uncheck();
    await server.getByLabel('From', { exact: true }).fill('not an address');
    await expect(server.getByTestId('email-from')).toHaveAttribute('aria-invalid', 'true');
    await expect(save).toBeDisabled();
    await server.getByLabel('From', { exact: true }).fill('agents@example.test');
    await server.getByLabel('User', { exact: true }).fill('agents');
    await server.getByLabel('Password', { exact: true }).fill(`smtp-password-${suffix}`);
    await save.click();
    await expect(server.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();
    await expect(server.getByTestId('email-updated')).toContainText('Last changed by the API token');
    // The password went to the server and is neither shown nor given back; an empty field keeps it.
    const password = server.getByLabel('Password', { exact: true });
    await expect(password).toHaveValue('');
    await expect(password).toHaveAttribute('type', 'password');
    await expect(password).toHaveAttribute('placeholder', 'kept — leave empty to keep it');
    const kept = await (await api('/settings/email')).text();
    expect(kept).not.toContain(`smtp-password-${suffix}`);
    expect(JSON.parse(kept)).toMatchObject({ host: '127.0.0.1', port: closed, user: 'agents', password_set: true });

    // The API token has no address of its own: the test mail needs one.
    const sendTest = server.getByRole('button', { name: 'Send a test mail' });
    await expect(server.getByLabel('Test address', { exact: true })).toHaveAccessibleDescription(
      /^You have no address here: enter one\./,
    );
    await expect(sendTest).toBeDisabled();
    await server.getByLabel('Test address', { exact: true }).fill(opsAddress);
    await sendTest.click();
    await expect(server.getByTestId('email-test-error')).toContainText(
      'The test mail was not sent: the mail server did not take the mail:',
    );
    await expect(server.getByTestId('email-test-error')).toContainText('ECONNREFUSED');

    // The right port: the test mail goes, and the mail server has it.
    await server.getByLabel('Port', { exact: true }).fill(String(smtpPort));
    await save.click();
    await expect(server.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();
    await expect
      .poll(async () => (await (await api('/settings/email')).json()) as unknown)
      .toMatchObject({ port: smtpPort, password_set: true });
    await sendTest.click();
    await expect(server.getByTestId('email-test-result')).toHaveText(`A test mail was sent to ${opsAddress}.`);
    await expect(server.getByTestId('email-test-error')).toHaveCount(0);
    await expect
      .poll(async () => (await mails()).find((m) => m.to === opsAddress)?.subject)
      .toBe('A test from the agent service');
    const testMail = (await mails()).find((m) => m.to === opsAddress)!;
    expect(testMail.from).toContain('agents@example.test');
    expect(testMail.text).toContain('stops can be mailed through this server');
    await expect(dialog).not.toContainText(`smtp-password-${suffix}`);
    await server.screenshot({ path: screenshotPath('settings-mail') });
    expect(await axeViolations(page, '[data-testid="email-settings"]')).toEqual([]);

    // The organisation mails its stops to one named address; the project follows the organisation.
    const orgMail = dialog.getByRole('region', { name: 'Mail for Default organisation' });
    const projectMail = dialog.getByRole('region', { name: 'Mail for Default project' });
    await expect(orgMail.getByLabel('Nobody', { exact: true })).toBeChecked();
    await expect(projectMail.getByLabel('As the organisation (nobody)')).toBeChecked();
    const saveOrg = orgMail.getByRole('button', { name: 'Save recipients for Default organisation' });
    await expect(saveOrg).toBeDisabled();
    await orgMail.getByLabel('These addresses', { exact: true }).check();
    const list = orgMail.getByLabel('Addresses', { exact: true });
    await list.fill(`${reviewers}\nnot-an-address`);
    await expect(orgMail).toContainText('not-an-address is not an email address');
    await expect(list).toHaveAttribute('aria-invalid', 'true');
    await expect(saveOrg).toBeDisabled();
    await list.fill(reviewers);
    await saveOrg.click();
    await expect(orgMail.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();
    await expect(orgMail.getByTestId('email-org-updated')).toContainText('Chosen by the API token');
    expect(await (await api(`/orgs/${DEFAULT_ORG_ID}/email`)).json()).toMatchObject({
      scope_type: 'org',
      recipients: [reviewers],
      updated_by: 'api-token',
    });
    // The project's section, read again, says what "as the organisation" now means.
    await dialog.getByRole('button', { name: 'Close' }).click();
    await fromHeader(page, 'settings-open');
    await expect(projectMail.getByLabel(`As the organisation (${reviewers})`)).toBeChecked();
    await expect(orgMail.getByLabel('Addresses', { exact: true })).toHaveValue(reviewers);
    await projectMail.getByLabel('The people who may decide (by role)').check();
    await expect(projectMail.getByRole('button', { name: 'Save recipients for Default project' })).toBeEnabled();
    await projectMail.getByLabel(`As the organisation (${reviewers})`).check();
    await expect(projectMail.getByRole('button', { name: 'Save recipients for Default project' })).toBeDisabled();
    await orgMail.scrollIntoViewIfNeeded();
    await orgMail.screenshot({ path: screenshotPath('settings-mail-recipients') });
    await projectMail.screenshot({ path: screenshotPath('settings-mail-recipients-project') });
    expect(await axeViolations(page, '[data-testid="email-recipients-org"]')).toEqual([]);
    expect(await axeViolations(page, '[data-testid="email-recipients-project"]')).toEqual([]);
    // The whole dialog too: its sections side by side (one id each, one name each button).
    expect(await axeViolations(page, '[data-testid="settings"]')).toEqual([]);
    await dialog.getByRole('button', { name: 'Close' }).click();

    // Ada, a member of the project, reads both choices and changes neither; the mail server is not hers to see.
    const adaPage = await adaContext.newPage();
    await member(adaPage, `Ada ${suffix}`);
    await adaPage.getByTestId('scope-org').selectOption(DEFAULT_ORG_ID);
    await adaPage.getByTestId('scope-project').selectOption(DEFAULT_PROJECT_ID);
    await fromHeader(adaPage, 'settings-open');
    const adaDialog = adaPage.getByRole('dialog', { name: 'Settings' });
    const adaOrg = adaDialog.getByRole('region', { name: 'Mail for Default organisation' });
    const adaProject = adaDialog.getByRole('region', { name: 'Mail for Default project' });
    await expect(adaOrg.getByLabel('These addresses', { exact: true })).toBeChecked();
    await expect(adaOrg.getByLabel('These addresses', { exact: true })).toBeDisabled();
    await expect(adaOrg.getByLabel('Addresses', { exact: true })).toHaveValue(reviewers);
    await expect(adaOrg).toContainText("Only the organisation's administrators change this.");
    await expect(adaProject.getByLabel(`As the organisation (${reviewers})`)).toBeChecked();
    await expect(adaProject).toContainText("Only the project's owners change this.");
    await expect(adaDialog.getByRole('button', { name: /^Save recipients/ })).toHaveCount(0);
    await expect(adaDialog.getByTestId('email-settings')).toHaveCount(0);
    await adaOrg.screenshot({ path: screenshotPath('settings-mail-recipients-read-only') });
    expect(await axeViolations(adaPage, '[data-testid="settings"]')).toEqual([]);
    await adaContext.close();

    // A run of the default project stops at its gate: the stop is mailed to the address, and says so.
    await script(words(`Analysis ${marker}: the loader rename is safe to ship.`));
    await startRun(page, `Review: the mailed stop ${marker}`);
    const card = page.getByTestId('approval-card');
    await expect(card).toBeVisible();
    runId = await page.getByTestId('run-id').getAttribute('data-id');
    await expect(card.getByTestId('stop-sent-to')).toHaveText(`Sent by email to ${reviewers}`);
    await expect(card.getByTestId('stop-sent-to')).toHaveAttribute('data-via', 'email');

    await page.getByTestId('inbox-open').click();
    const item = page.getByTestId('inbox-item').filter({ hasText: marker });
    await expect(item.getByTestId('stop-sent-to')).toHaveText(`Sent by email to ${reviewers}`);
    await expect(item.getByTestId('stop-sent-to')).toHaveAttribute('data-status', 'delivered');
    await item.scrollIntoViewIfNeeded();
    await item.screenshot({ path: screenshotPath('inbox-mail-sent') });
    await page.screenshot({ path: screenshotPath('inbox-mail-sent-page') });
    expect(await axeViolations(page, '[data-testid="inbox"]')).toEqual([]);
    await page.getByTestId('inbox-close').click();

    // The mail arrived: the gated text, and no decision link (the address is nobody's here).
    await expect
      .poll(async () => (await mails()).some((m) => m.to === reviewers && m.text.includes(marker)))
      .toBe(true);
    const stopMail = (await mails()).find((m) => m.to === reviewers && m.text.includes(marker))!;
    expect(stopMail.from).toContain('agents@example.test');
    expect(stopMail.text).toContain('No person of the service has this address, so this mail cannot decide');
    const detail = (await (await api(`/runs/${runId}`)).json()) as RunDetail;
    expect(detail.sent_to).toEqual([{ via: 'email', to: reviewers, status: 'delivered', error: null }]);
  } finally {
    // Whatever failed above: the other specs' stops are mailed to nobody, and nothing of this one waits in their inbox.
    await api(`/orgs/${DEFAULT_ORG_ID}/email`, { method: 'PUT', json: { recipients: null } }).catch(() => undefined);
    await api(`/projects/${DEFAULT_PROJECT_ID}/email`, { method: 'PUT', json: { recipients: null } }).catch(
      () => undefined,
    );
    if (runId) {
      const run = (await (await api(`/runs/${runId}`)).json().catch(() => null)) as RunDetail | null;
      if (run?.status === 'waiting_approval' || run?.status === 'running')
        await api(`/runs/${runId}/cancel`, { method: 'POST', json: { reason: 'the mail spec ended' } });
    }
    await adaContext.close();
  }
  expect(await sql(`SELECT 1 FROM svc_email_recipients`)).toEqual([]);
});
