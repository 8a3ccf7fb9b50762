import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { startAskingServer, type AskingServer } from '../fixtures/mcp-asking-server';
import { askingAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { startSlackStandIn, type SlackMessage, type SlackStandIn } from '../helpers/slack-stand-in';
import { startSmtpStandIn, type SmtpStandIn } from '../helpers/smtp-stand-in';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * A tool server's question where people are (docs/approvals.md#questions-from-tool-servers): posted in Slack with its
 * fields, a link to the studio's form and Decline, and followed there as it is answered; mailed once to the people who
 * may answer it, with the studio's link and no decision link. Slack is a stand-in speaking its Web API and signing its
 * interactions; mail goes to a real SMTP server on loopback; the asking MCP server is built with the SDK.
 */
const SECRET = 'a-session-secret-for-question-doors-0123456789';
const PUBLIC_URL = 'https://agents.example.test';
const ctx = useIntegrationServer({ server: false });

let asker: AskingServer;
let slack: SlackStandIn;
let smtp: SmtpStandIn;
let catalog: string;
let server: TestServer;
let ann: { token: string; slackId: string };

beforeAll(async () => {
  [asker, slack, smtp] = await Promise.all([startAskingServer(), startSlackStandIn(), startSmtpStandIn()]);
  catalog = await writeFixtureCatalog([askingAgent(asker.url)]);
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: 'question-doors-admin-token-0123456789',
    GENERATED_DIR: catalog,
    MCP_ALLOWED_HOSTS: '127.0.0.1',
    SLACK_API_URL: slack.apiUrl,
    PUBLIC_URL,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'question-doors-')),
  });
  const connected = await server.request(`/orgs/${DEFAULT_ORG_ID}/slack`, {
    method: 'PUT',
    json: { bot_token: slack.botToken, signing_secret: slack.signingSecret, channel: '#approvals' },
  });
  expect(connected.status).toBe(200);
  const mailServer = { host: '127.0.0.1', port: smtp.port, secure: false, from: 'agents@example.test' };
  expect((await server.request('/settings/email', { method: 'PUT', json: mailServer })).status).toBe(200);
  const recipients = { method: 'PUT', json: { recipients: 'deciders' } };
  expect((await server.request(`/orgs/${DEFAULT_ORG_ID}/email`, recipients)).status).toBe(200);
  const annId = await addUser(server.pool, 'Ann', [['project', DEFAULT_PROJECT_ID, 'member']]);
  const veraId = await addUser(server.pool, 'Vera', [['project', DEFAULT_PROJECT_ID, 'viewer']]);
  await server.pool.query(`UPDATE svc_users SET email = name || '@example.test' WHERE id = ANY($1)`, [[annId, veraId]]);
  ann = { token: await signSession(annId, SECRET, '1h', 'Ann'), slackId: 'U0ANN00001' };
  slack.addUser({ id: ann.slackId, name: 'Ann' });
  const linked = await server.request('/me/slack', {
    method: 'PUT',
    json: { team_id: slack.teamId, slack_user_id: ann.slackId },
    headers: { authorization: `Bearer ${ann.token}` },
  });
  expect(linked.status).toBe(200);
});

afterAll(async () => {
  await server?.close();
  await Promise.all([asker?.close(), slack?.close(), smtp?.close()]);
  fs.rmSync(catalog, { recursive: true, force: true });
});

/** A run whose intake calls ask_release, until the question is asked: its stop id and thread. */
async function askedRun(): Promise<{ stopId: string; threadId: string; runId: string }> {
  ctx.model.toolTurns.push([{ name: 'asker__ask_release', arguments: {} }]);
  ctx.model.reply(['Noted.']);
  const events = await readEvents(
    await server.request('/graphs/ask-review/run', {
      method: 'POST',
      json: { message: 'ask me' },
      headers: { authorization: `Bearer ${ann.token}` },
    }),
    (event) => event.data.type === 'tool_question',
  );
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { stopId: `${start.run_id}:${events.at(-1)!.id}`, threadId: start.thread_id, runId: start.run_id };
}

const messageOf = (threadId: string) =>
  slack.waitFor(() => slack.messages('approvals').find((m) => JSON.stringify(m.blocks).includes(threadId)));
const shown = (message: SlackMessage) => JSON.stringify(slack.message('approvals', message.ts)!.blocks);

describe("a tool server's question in Slack and mail", () => {
  it('is posted with its fields, the studio link and Decline, mailed to who may answer it, and followed', async () => {
    const { stopId, threadId, runId } = await askedRun();
    const message = await messageOf(threadId);
    const blocks = JSON.stringify(message.blocks);
    expect(blocks).toContain('*asker.ask_release* (server asker) asks');
    expect(blocks).toContain('Which name should the release carry?');
    expect(blocks).toContain('Fields: Release name (required), How many');
    expect(blocks).toContain(`"url":"${PUBLIC_URL}/ui?thread=${threadId}"`);
    expect(blocks).toContain('"action_id":"question.decline"');

    const mail = await until(async () => smtp.mails.find((m) => m.text.includes(threadId)));
    expect(mail.recipients).toEqual(['Ann@example.test']); // a viewer may not answer: Vera gets none
    expect(mail.subject).toBe('Question from asker.ask_release: Which name should the release carry?');
    expect(mail.text).toContain('It asks for: Release name (required), How many.');
    expect(mail.text).toContain(`Answer it in the studio: ${PUBLIC_URL}/ui`);
    expect(mail.text).not.toContain('/stop-links/');

    const answered = await server.request(`/stops/${stopId}/answer`, {
      method: 'POST',
      json: { action: 'accept', content: { name: 'v2.0' } },
      headers: { authorization: `Bearer ${ann.token}` },
    });
    expect(answered.status).toBe(200);
    await slack.waitFor(() => shown(message).includes('*Answered by Ann*'));
    expect(shown(message)).not.toContain('question.decline');
    await until(async () => asker.answers.find((a) => a.content?.name === 'v2.0'));
    expect(smtp.mails.filter((m) => m.text.includes(threadId))).toHaveLength(1);
    // The run goes on to its gate (the model's next turns are its own, not the next test's).
    const after = await readEvents(
      await server.request(`/runs/${runId}/stream`, { headers: { authorization: `Bearer ${ann.token}` } }),
    );
    expect(after.at(-1)!.data.type).toBe('gate_waiting');
  });

  it('is declined from Slack as the linked person; the server hears decline and the message says who', async () => {
    const { threadId } = await askedRun();
    const message = await messageOf(threadId);
    const decline = (message.blocks as { elements?: { action_id?: string; value?: string }[] }[])
      .flatMap((block) => block.elements ?? [])
      .find((element) => element.action_id === 'question.decline');
    expect(decline, JSON.stringify(message.blocks)).toBeDefined();
    const clicked = await slack.interact(
      `${server.url}/integrations/slack/interactions`,
      slack.blockActionPayload({
        user: { id: ann.slackId, name: 'Ann' },
        channel: message.channel,
        messageTs: message.ts,
        actionId: 'question.decline',
        value: decline!.value!,
      }),
    );
    expect(clicked.status).toBe(200);
    await until(async () => asker.answers.find((a) => a.action === 'decline'));
    await slack.waitFor(() => shown(message).includes('*Declined by Ann*'));
  });
});
