import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import type { RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { signSession } from '../helpers/sessions';
import { signSlackRequest } from '../helpers/slack-stand-in';
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
 * Slack as a place to decide stops, seen from the studio: an organisation's administrator connects the workspace in
 * Settings (the Slack stand-in of global-setup.ts answers the server as Slack would), a person links her Slack
 * identity, and a stop of the organisation shows where it was sent, in the inbox and on the run's approval card; a
 * click in Slack decides as her, and the record says so. The connection is removed at the end whatever happens, so
 * that the other specs' stops are sent nowhere.
 */

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the browser tests with npm run test:e2e`);
  return value;
};

/** Someone of the default project, signed in with a session of her own in a browser of her own. */
async function person(page: Page, name: string): Promise<{ id: string; token: string }> {
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
  return { id, token };
}

/**
 * A press of a stop message's Approve button, as Slack posts it to the request URL: the payload form-encoded and
 * signed with the app's signing secret (the stand-in lives in the setup's process; this is what its `interact()`
 * sends).
 */
async function approveInSlack(slackUserId: string, stop: { id: string; round: number }): Promise<Response> {
  const teamId = env('E2E_SLACK_TEAM_ID');
  const payload = {
    type: 'block_actions',
    team: { id: teamId },
    user: { id: slackUserId, team_id: teamId },
    container: { type: 'message', channel_id: 'C0APPROVALS', message_ts: '1700000000.000100' },
    trigger_id: `${Date.now()}.trigger`,
    actions: [
      { action_id: 'stop.approve', value: JSON.stringify({ stop: stop.id, round: stop.round }), type: 'button' },
    ],
  };
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const timestamp = Math.floor(Date.now() / 1000);
  return fetch(`${baseUrl()}/integrations/slack/interactions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': signSlackRequest(env('E2E_SLACK_SIGNING_SECRET'), timestamp, body),
    },
    body,
  });
}

const axeViolations = async (page: Page, selector: string) =>
  (
    await new AxeBuilder({ page }).include(selector).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  ).violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);

test('Settings → Slack: connected, tested and linked; a stop says it was sent to #approvals; a click there decides', async ({
  page,
  browser,
  context,
}) => {
  test.setTimeout(150_000);
  const suffix = randomUUID().slice(0, 6);
  const marker = `slack-${suffix}`;
  const botToken = env('E2E_SLACK_BOT_TOKEN');
  const signingSecret = env('E2E_SLACK_SIGNING_SECRET');
  const teamId = env('E2E_SLACK_TEAM_ID');
  const slackUserId = `U0ADA${suffix.toUpperCase().replace(/[^A-Z0-9]/g, '0')}`;
  let runId: string | null = null;
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const adaContext = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  try {
    // The administrator (the API token) opens Settings with the default organisation chosen: not connected yet.
    await openStudio(page);
    await page.getByTestId('scope-org').selectOption(DEFAULT_ORG_ID);
    await page.getByTestId('scope-project').selectOption(DEFAULT_PROJECT_ID);
    await fromHeader(page, 'settings-open');
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    const slack = dialog.getByRole('region', { name: 'Slack for Default organisation' });
    await expect(slack.getByTestId('slack-connect')).toBeVisible();
    // The API token is no person: it links no Slack identity.
    await expect(dialog.getByTestId('slack-identity')).toHaveCount(0);
    const tokenInput = slack.getByLabel('Bot token');
    const secretInput = slack.getByLabel('Signing secret');
    await expect(tokenInput).toHaveAttribute('type', 'password');
    await expect(secretInput).toHaveAttribute('type', 'password');
    await expect(slack.getByLabel('Channel')).toHaveValue('#approvals');
    const connect = slack.getByRole('button', { name: 'Connect' });
    await expect(connect).toBeDisabled();

    // A token Slack refuses: the server's words, and nothing connected.
    await tokenInput.fill('not a token');
    await expect(slack).toContainText('must be a bot token (xoxb-…)');
    await tokenInput.fill('xoxb-0000-0000-notthebotstoken');
    await secretInput.fill(signingSecret);
    await connect.click();
    await expect(slack.getByTestId('slack-error')).toHaveText('Slack refused auth.test: invalid_auth');
    await slack.screenshot({ path: screenshotPath('settings-slack-refused') });
    expect((await api(`/orgs/${DEFAULT_ORG_ID}/slack`)).status).toBe(404);

    // The right one: the workspace Slack named, the channel, who connected it, the request URL to give the app.
    await tokenInput.fill(botToken);
    await connect.click();
    await expect(slack.getByTestId('slack-workspace')).toContainText('Acme');
    await expect(slack.getByTestId('slack-workspace')).toContainText(teamId);
    await expect(slack.getByTestId('slack-channel')).toHaveText('#approvals');
    await expect(slack.getByTestId('slack-connection')).toContainText('by the API token');
    const requestUrl = `${env('E2E_PUBLIC_URL')}/integrations/slack/interactions`;
    await expect(slack.getByTestId('slack-request-url').locator('code')).toHaveText(requestUrl);
    await expect(slack.getByTestId('slack-error')).toHaveCount(0);
    await expect(slack.getByTestId('slack-deliveries-none')).toBeVisible();
    // The secrets went to the server and are shown nowhere, nor given back by it.
    await expect(dialog).not.toContainText(botToken);
    await expect(dialog).not.toContainText(signingSecret);
    const stored = await (await api(`/orgs/${DEFAULT_ORG_ID}/slack`)).text();
    expect(stored).not.toContain(botToken);
    expect(stored).not.toContain(signingSecret);

    await slack.getByRole('button', { name: 'Copy the request URL' }).click();
    await expect(slack.getByRole('status').filter({ hasText: 'Copied' })).toBeVisible();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(requestUrl);

    await slack.getByRole('button', { name: 'Send a test message' }).click();
    await expect(slack.getByTestId('slack-test-result')).toHaveText(
      /^A test message was posted to #approvals \(C[A-Z0-9]+\)\.$/,
    );
    await slack.screenshot({ path: screenshotPath('settings-slack') });
    expect(await axeViolations(page, '[data-testid="slack-settings"]')).toEqual([]);
    await dialog.getByRole('button', { name: 'Close' }).click();

    // Ada, a member of the default project, links her Slack identity in her own Settings.
    const adaPage = await adaContext.newPage();
    const adaName = `Ada ${suffix}`;
    const ada = await person(adaPage, adaName);
    await fromHeader(adaPage, 'settings-open');
    const adaDialog = adaPage.getByRole('dialog', { name: 'Settings' });
    // She administers no organisation: its Slack connection is not hers to see.
    await expect(adaDialog.getByTestId('slack-settings')).toHaveCount(0);
    const identity = adaDialog.getByRole('region', { name: 'Your Slack identity' });
    await expect(identity.getByTestId('slack-links-none')).toHaveText('Not linked.');
    await expect(identity).toContainText('In Slack: your profile, ⋮, Copy member ID.');
    const link = identity.getByRole('button', { name: 'Link' });
    await identity.getByLabel('Workspace id').fill(teamId);
    await identity.getByLabel('Your member id').fill('ada');
    await expect(identity).toContainText('must be a Slack member id (U0123ABC)');
    await expect(link).toBeDisabled();
    await identity.getByLabel('Your member id').fill(slackUserId);
    await link.click();
    await expect(identity.getByTestId('slack-link')).toContainText(`Member ${slackUserId} of workspace ${teamId}`);
    await expect(identity.getByTestId('slack-link')).toContainText('linked by you');
    await expect(identity.getByLabel('Your member id')).toHaveValue('');
    const links = await fetch(`${baseUrl()}/me/slack`, { headers: { authorization: `Bearer ${ada.token}` } });
    expect(await links.json()).toMatchObject({ links: [{ team_id: teamId, slack_user_id: slackUserId }] });
    await identity.screenshot({ path: screenshotPath('settings-slack-identity') });
    expect(await axeViolations(adaPage, '[data-testid="slack-identity"]')).toEqual([]);
    await adaDialog.getByRole('button', { name: 'Close' }).click();

    // The administrator's run of the default project stops at its gate: the stop is posted to #approvals.
    await script(words(`Analysis ${marker}: the loader rename is safe to ship.`));
    await startRun(page, `Review: the Slack stop ${marker}`);
    const card = page.getByTestId('approval-card');
    await expect(card).toBeVisible();
    runId = await page.getByTestId('run-id').getAttribute('data-id');
    // Its record is read again while it waits: "sending…" becomes where it went.
    await expect(card.getByTestId('stop-sent-to')).toHaveText('Sent to Slack #approvals');
    await expect(card.getByTestId('stop-sent-to')).toHaveAttribute('data-status', 'delivered');
    await card.screenshot({ path: screenshotPath('run-slack-sent') });

    await page.getByTestId('inbox-open').click();
    const item = page.getByTestId('inbox-item').filter({ hasText: marker });
    await expect(item.getByTestId('stop-sent-to')).toHaveText('Sent to Slack #approvals');
    await item.scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('inbox-slack-sent') });
    expect(await axeViolations(page, '[data-testid="inbox"]')).toEqual([]);
    await page.getByTestId('inbox-close').click();

    // Settings list the message's delivery.
    await fromHeader(page, 'settings-open');
    await expect(slack.getByTestId('slack-delivery').first()).toHaveAttribute('data-status', 'delivered');
    await expect(slack.getByTestId('slack-delivery').first()).toContainText(`run ${runId!.slice(0, 8)}`);
    await slack.screenshot({ path: screenshotPath('settings-slack-deliveries') });
    await dialog.getByRole('button', { name: 'Close' }).click();

    // Ada presses Approve in Slack: the run goes on, and its record says the decision was taken there.
    const detail = (await (await api(`/runs/${runId}`)).json()) as RunDetail;
    expect(detail.sent_to).toEqual([{ via: 'slack', to: '#approvals', status: 'delivered', error: null }]);
    await script(words(`Published ${marker}.`));
    const pressed = await approveInSlack(slackUserId, detail.stop!);
    expect(pressed.status).toBe(200);
    await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
    const decision = page.getByTestId('transcript-decision');
    await expect(decision.getByTestId('decision-summary')).toContainText(`Approved by ${adaName} via Slack`);
    await page.getByTestId('tab-approval').click();
    await expect(page.getByTestId('gate-decision')).toContainText(`Approved by ${adaName} via Slack`);
    await expect(page.getByTestId('stop-sent-to')).toHaveCount(0);
    await page.screenshot({ path: screenshotPath('run-decided-via-slack') });

    // Ada unlinks herself: her clicks in Slack decide nothing any more.
    await fromHeader(adaPage, 'settings-open');
    await identity.getByRole('button', { name: 'Unlink your Slack identity' }).click();
    await expect(identity.getByTestId('slack-links-none')).toHaveText('Not linked.');

    // The administrator disconnects, after being asked: the form is back, and the server has no connection.
    await fromHeader(page, 'settings-open');
    await slack.getByRole('button', { name: 'Disconnect' }).click();
    const question = page.getByRole('dialog', { name: 'Disconnect Slack from Default organisation?' });
    await expect(question).toContainText('Stops are no longer posted to #approvals');
    await question.getByRole('button', { name: 'Disconnect' }).click();
    await expect(slack.getByTestId('slack-connect')).toBeVisible();
    expect((await api(`/orgs/${DEFAULT_ORG_ID}/slack`)).status).toBe(404);
  } finally {
    // Whatever failed above: the other specs' stops are sent nowhere, and nothing of this one waits in their inbox.
    await api(`/orgs/${DEFAULT_ORG_ID}/slack`, { method: 'DELETE' }).catch(() => undefined);
    if (runId) {
      const run = (await (await api(`/runs/${runId}`)).json().catch(() => null)) as RunDetail | null;
      if (run?.status === 'waiting_approval' || run?.status === 'running')
        await api(`/runs/${runId}/cancel`, { method: 'POST', json: { reason: 'the Slack spec ended' } });
    }
    await adaContext.close();
  }
});
