import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApprovalItem, GateDecisionRecord, RunDetail } from '../../src-server/contracts/runs';
import type { SlackConnection } from '../../src-server/contracts/slack';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { gatedAgent, toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, grantRole, signSession } from '../helpers/sessions';
import { startSlackStandIn, type SlackMessage, type SlackStandIn } from '../helpers/slack-stand-in';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Slack as a door to stops (docs/approvals.md#slack), end to end: the server in this process on real PostgreSQL, and a
 * stand-in that speaks Slack's Web API and posts interactions signed as Slack signs them. A stop is posted; a click
 * decides as the linked person through the one decision of every door; the message follows the stop wherever it is
 * decided; what is not signed, is old or is replayed decides nothing.
 */
const SECRET = 'a-session-secret-for-the-slack-tests-0123456789';
const API_TOKEN = 'slack-test-admin-token-0123456789';
const PUBLIC_URL = 'https://agents.example.test';

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let slack: SlackStandIn;
let catalog: string;
let project: string;
let interactions: string;

beforeAll(async () => {
  slack = await startSlackStandIn();
  catalog = await writeFixtureCatalog([
    gatedAgent('slack-review', {}),
    gatedAgent('slack-pair', { approvals: 2 }),
    gatedAgent('slack-lapse', { expiry: { after_s: 1, action: 'reject', target: null } }),
    toolAgent,
  ]);
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    RUN_LEASE_S: '2',
    GENERATED_DIR: catalog,
    SLACK_API_URL: slack.apiUrl,
    PUBLIC_URL,
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'slack-data-')),
  });
  interactions = `${server.url}/integrations/slack/interactions`;
  const connected = await server.request(`/orgs/${DEFAULT_ORG_ID}/slack`, {
    method: 'PUT',
    json: { bot_token: slack.botToken, signing_secret: slack.signingSecret, channel: '#approvals' },
  });
  expect(connected.status).toBe(200);
});

afterAll(async () => {
  await server?.close();
  await slack?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
});

beforeEach(() => {
  slack.reset();
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'slack-project-'));
});

type Person = { id: string; name: string; token: string; slackId: string };
let people = 0;

/** A signed-in person with a role on the default project, and a Slack identity (linked by herself unless told). */
async function person(
  name: string,
  role: 'viewer' | 'member' | 'owner' | null,
  link: 'self' | 'none' = 'self',
): Promise<Person> {
  const id = await addUser(server.pool, name);
  if (role) await grantRole(server.pool, id, 'project', DEFAULT_PROJECT_ID, role);
  people += 1;
  const slackId = `U0PERSON${String(people).padStart(3, '0')}`;
  slack.addUser({ id: slackId, name });
  const caller = { id, name, token: await signSession(id, SECRET, '1h', name), slackId };
  if (link === 'self') {
    const linked = await as(caller, '/me/slack', {
      method: 'PUT',
      json: { team_id: slack.teamId, slack_user_id: slackId },
    });
    expect(linked.status).toBe(200);
  }
  return caller;
}

const as = (caller: Person | null, to: string, init: { method?: string; json?: unknown } = {}) =>
  server.request(to, { ...init, headers: caller ? { authorization: `Bearer ${caller.token}` } : {} });

/** A request without any token. */
const anonymous = (to: string, method: string, json?: unknown) =>
  fetch(`${server.url}${to}`, {
    method,
    ...(json ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) } : {}),
  });

/** A run of `agent` up to its gate, with the analysis `text`. */
async function toGate(agent: string, text = 'The analysis says: ship it.') {
  ctx.model.reply([text]);
  const events = await readEvents(
    await server.request(`/graphs/${agent}/run`, { method: 'POST', json: { message: `Review for ${agent}` } }),
  );
  expect(events.at(-1)!.data.type).toBe('gate_waiting');
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { runId: start.run_id, threadId: start.thread_id };
}

const detail = async (runId: string) => (await (await server.request(`/runs/${runId}`)).json()) as RunDetail;

/** The message of a thread's stop once posted (by the worker, after the stop is committed): it links the thread. */
async function postedMessage(threadId: string): Promise<SlackMessage> {
  return slack.waitFor(() => slack.messages('approvals').find((m) => JSON.stringify(m.blocks).includes(threadId)));
}

/** The value a button of the message carries. */
function buttonOf(message: SlackMessage, actionId: string): { value: string; stop: string; round: number } {
  const actions = message.blocks.find((b) => (b as { type: string }).type === 'actions') as
    { elements: { action_id: string; value: string }[] } | undefined;
  const button = actions?.elements.find((e) => e.action_id === actionId);
  if (!button) throw new Error(`no ${actionId} button in ${JSON.stringify(message.blocks)}`);
  return { value: button.value, ...(JSON.parse(button.value) as { stop: string; round: number }) };
}

/** A click on one of the message's buttons by a Slack user, signed as Slack signs it. */
function click(message: SlackMessage, actionId: string, slackUser: { id: string; name?: string }) {
  return slack.interact(
    interactions,
    slack.blockActionPayload({
      user: slackUser,
      channel: message.channel,
      messageTs: message.ts,
      actionId,
      value: buttonOf(message, actionId).value,
    }),
  );
}

const decisionsOf = async (threadId: string) =>
  (await (await server.request(`/threads/${threadId}/decisions`)).json()) as GateDecisionRecord[];

const text = (message: SlackMessage | undefined) => JSON.stringify(message?.blocks ?? []);

describe('connecting a workspace', () => {
  it('checks the token with Slack, keeps the secrets sealed, and shows them to nobody', async () => {
    const shown = (await (await server.request(`/orgs/${DEFAULT_ORG_ID}/slack`)).json()) as SlackConnection;
    expect(shown).toMatchObject({
      team_id: slack.teamId,
      app_id: slack.appId,
      channel: '#approvals',
      request_url: `${PUBLIC_URL}/integrations/slack/interactions`,
    });
    expect(JSON.stringify(shown)).not.toContain(slack.botToken);
    expect(JSON.stringify(shown)).not.toContain(slack.signingSecret);
    const { rows } = await server.pool.query(`SELECT * FROM svc_slack_connections`);
    expect(JSON.stringify(rows)).not.toContain(slack.botToken);
    expect(JSON.stringify(rows)).not.toContain(slack.signingSecret);

    const refused = await server.request(`/orgs/${DEFAULT_ORG_ID}/slack`, {
      method: 'PUT',
      json: { bot_token: 'xoxb-0000-not-the-token', signing_secret: slack.signingSecret, channel: '#approvals' },
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      'Slack refused auth.test: invalid_auth',
    );
    // A member of the organisation's project is no admin of it.
    const member = await person('Mia Member', 'member', 'none');
    expect((await as(member, `/orgs/${DEFAULT_ORG_ID}/slack`)).status).toBe(403);

    // Nothing secret reached the server's log.
    expect(server.logs.join('\n')).not.toContain(slack.botToken);
    expect(server.logs.join('\n')).not.toContain(slack.signingSecret);

    const tested = await server.request(`/orgs/${DEFAULT_ORG_ID}/slack/test`, { method: 'POST' });
    expect(tested.status).toBe(200);
    expect(slack.messages('approvals').at(-1)?.text).toMatch(/A test from the agent service/);
  });
});

describe('who may do what with Slack', () => {
  it("lets the organisation's admins alone connect, read and test it and choose channels; others get 403, outsiders 404", async () => {
    const { rows } = await server.pool.query<{ id: string }>(
      `INSERT INTO svc_orgs (id, name) VALUES (gen_random_uuid(), 'Elsewhere') RETURNING id`,
    );
    const elsewhere = rows[0]!.id;
    const callers = {
      admin: await person('Ada Admin', null, 'none'),
      owner: await person('Otto Owner', 'owner', 'none'),
      member: await person('Meg Member', 'member', 'none'),
      viewer: await person('Val Viewer', 'viewer', 'none'),
      outsider: await person('Oz Outsider', null, 'none'),
    };
    await grantRole(server.pool, callers.admin.id, 'org', DEFAULT_ORG_ID, 'admin');
    const body = { bot_token: slack.botToken, signing_secret: slack.signingSecret, channel: '#approvals' };
    const routes: [string, string, unknown?][] = [
      ['GET', `/orgs/${DEFAULT_ORG_ID}/slack`],
      ['POST', `/orgs/${DEFAULT_ORG_ID}/slack/test`],
      ['PUT', `/projects/${DEFAULT_PROJECT_ID}/slack`, { channel: null }],
      ['PUT', `/orgs/${DEFAULT_ORG_ID}/slack`, body],
    ];
    for (const [method, to, json] of routes) {
      const seen: Record<string, number> = {};
      for (const [who, caller] of Object.entries(callers)) {
        seen[who] = (await as(caller, to, { method, ...(json ? { json } : {}) })).status;
      }
      seen.anonymous = (await anonymous(to, method, json)).status;
      expect(seen, `${method} ${to}`).toEqual({
        admin: 200,
        owner: 403,
        member: 403,
        viewer: 403,
        outsider: 404,
        anonymous: 401,
      });
    }
    // Another organisation's admin reaches nothing of this one's, and this one's nothing of hers.
    await grantRole(server.pool, callers.outsider.id, 'org', elsewhere, 'admin');
    expect((await as(callers.outsider, `/orgs/${DEFAULT_ORG_ID}/slack`)).status).toBe(404);
    expect((await as(callers.admin, `/orgs/${elsewhere}/slack`)).status).toBe(404);
    expect((await as(callers.outsider, `/orgs/${elsewhere}/slack`)).status).toBe(404);
    // A person's links are her own: each sees hers alone.
    const linked = await as(callers.member, '/me/slack', {
      method: 'PUT',
      json: { team_id: slack.teamId, slack_user_id: 'U0MEG00001' },
    });
    expect(linked.status).toBe(200);
    expect(((await (await as(callers.viewer, '/me/slack')).json()) as { links: unknown[] }).links).toEqual([]);
    const taken = await as(callers.viewer, '/me/slack', {
      method: 'PUT',
      json: { team_id: slack.teamId, slack_user_id: 'U0MEG00001' },
    });
    expect(taken.status).toBe(409);
    expect((await anonymous('/me/slack', 'GET')).status).toBe(401);
    expect((await as(callers.member, '/me/slack', { method: 'DELETE' })).status).toBe(204);
    expect((await as(callers.member, '/me/slack', { method: 'DELETE' })).status).toBe(404);
  });
});

describe('a gate in Slack', () => {
  it('is posted with its text escaped, and an owner’s Approve decides it as her, via Slack, and updates the message', async () => {
    const owner = await person('Olga Owner', 'owner');
    const { runId, threadId } = await toGate(
      'slack-review',
      'Ship it <https://evil.example|click here> <!channel> & co',
    );
    const message = await postedMessage(threadId);
    const blocks = text(message);
    expect(blocks).toContain('&lt;https://evil.example|click here&gt; &lt;!channel&gt; &amp; co');
    expect(blocks).not.toContain('<https://evil.example');
    expect(blocks).toContain(`${PUBLIC_URL}/ui?thread=${threadId}`);
    const stop = (await detail(runId)).stop!;
    expect(buttonOf(message, 'stop.approve')).toMatchObject({ stop: stop.id, round: 1 });
    expect((await detail(runId)).sent_to).toEqual([
      { via: 'slack', to: '#approvals', status: 'delivered', error: null },
    ]);

    ctx.model.reply(['Shipped.']);
    const answer = await click(message, 'stop.approve', { id: owner.slackId });
    expect(answer.status).toBe(200);
    await until(async () => (await detail(runId)).status === 'completed' || undefined, 15_000);
    const decisions = await decisionsOf(threadId);
    expect(decisions).toMatchObject([{ decision: 'approve', decided_by: { id: owner.id }, via: 'slack' }]);
    const updated = await slack.waitFor(() => {
      const now = slack.message(message.channel, message.ts);
      return now && text(now).includes('Approved by Olga Owner via Slack') ? now : undefined;
    });
    expect(text(updated)).not.toContain('stop.approve');
  });

  it("decides nothing for a viewer's click or an unlinked user's, and tells each of them in Slack", async () => {
    const viewer = await person('Vic Viewer', 'viewer');
    const stranger = { id: 'U0STRANGER1', name: 'Stranger' };
    slack.addUser(stranger);
    const { runId, threadId } = await toGate('slack-review');
    const message = await postedMessage(threadId);

    expect((await click(message, 'stop.approve', { id: viewer.slackId })).status).toBe(200);
    expect((await click(message, 'stop.approve', stranger)).status).toBe(200);
    const told = await slack.waitFor(() => (slack.ephemerals().length >= 2 ? slack.ephemerals() : undefined));
    expect(told.find((e) => e.user === viewer.slackId)?.text).toMatch(/^Nothing was decided: .*role/);
    expect(told.find((e) => e.user === stranger.id)?.text).toMatch(/not linked.*PUT \/me\/slack/);
    expect((await detail(runId)).status).toBe('waiting_approval');
    expect(await decisionsOf(threadId)).toEqual([]);
  });

  it('refuses a bad signature, an old timestamp and a replay with 401, deciding nothing', async () => {
    const owner = await person('Ona Owner', 'owner');
    const { runId, threadId } = await toGate('slack-review');
    const message = await postedMessage(threadId);
    const payload = () =>
      slack.blockActionPayload({
        user: { id: owner.slackId },
        channel: message.channel,
        messageTs: message.ts,
        actionId: 'stop.reject',
        value: buttonOf(message, 'stop.reject').value,
      });

    const forged = await slack.interact(interactions, payload(), { signingSecret: 'notthesigningsecret0000' });
    expect(forged.status).toBe(401);
    expect(forged.json).toMatchObject({ error: { code: 'unauthorized' } });
    const old = await slack.interact(interactions, payload(), { timestamp: Math.floor(Date.now() / 1000) - 301 });
    expect(old.status).toBe(401);
    expect(old.json).toMatchObject({ error: { message: expect.stringMatching(/five minutes/) } });

    // A real click (it opens the reason's modal), then the same bytes again.
    const first = await slack.interact(interactions, payload());
    expect(first.status).toBe(200);
    const replayed = await slack.replay(first, interactions);
    expect(replayed.status).toBe(401);
    expect(replayed.json).toMatchObject({ error: { message: expect.stringMatching(/replay/) } });
    expect(slack.views()).toHaveLength(1);
    expect((await detail(runId)).status).toBe('waiting_approval');
    expect(await decisionsOf(threadId)).toEqual([]);
  });

  it('rejects with the reason its modal asks for', async () => {
    const owner = await person('Rita Owner', 'owner');
    const { runId, threadId } = await toGate('slack-review');
    const message = await postedMessage(threadId);
    await click(message, 'stop.reject', { id: owner.slackId });
    const opened = await slack.waitFor(() => slack.views()[0]);
    expect(opened.view.callback_id).toBe('stop.reject');
    const empty = await slack.interact(
      interactions,
      slack.viewSubmissionPayload({
        user: { id: owner.slackId },
        view: opened.view,
        values: { reason: { value: { type: 'plain_text_input', value: ' ' } } },
      }),
    );
    expect(empty.json).toEqual({ response_action: 'errors', errors: { reason: 'Say why it is rejected' } });
    const submitted = await slack.interact(
      interactions,
      slack.viewSubmissionPayload({
        user: { id: owner.slackId },
        view: opened.view,
        values: { reason: { value: { type: 'plain_text_input', value: 'Not this week' } } },
      }),
    );
    expect(submitted.json).toEqual({ response_action: 'clear' });
    await until(async () => (await detail(runId)).status !== 'waiting_approval' || undefined, 15_000);
    expect(await decisionsOf(threadId)).toMatchObject([{ decision: 'reject', reason: 'Not this week', via: 'slack' }]);
    await slack.waitFor(
      () =>
        text(slack.message(message.channel, message.ts)).includes('Rejected by Rita Owner via Slack: Not this week') ||
        undefined,
    );
  });

  it('follows a decision made in the studio, and an expiry', async () => {
    const { runId, threadId } = await toGate('slack-review');
    const message = await postedMessage(threadId);
    ctx.model.reply(['Done.']);
    const stop = (await detail(runId)).stop!;
    const decided = await server.request(`/stops/${stop.id}/decision`, {
      method: 'POST',
      json: { decision: 'approve', round: stop.round },
    });
    expect(decided.status).toBe(202);
    await slack.waitFor(
      () => text(slack.message(message.channel, message.ts)).includes('Approved by api-token') || undefined,
    );

    const lapsing = await toGate('slack-lapse');
    const lapsingMessage = await postedMessage(lapsing.threadId);
    await slack.waitFor(
      () => text(slack.message(lapsingMessage.channel, lapsingMessage.ts)).includes('Expired (reject)') || undefined,
      20_000,
    );
  });

  it('refuses through Slack, as through the API and the inbox, an approval of a round another approver has edited since', async () => {
    const ann = await person('Ann Approver', 'member');
    const bob = await person('Bob Approver', 'member');
    const { runId, threadId } = await toGate('slack-pair', 'First draft.');
    const message = await postedMessage(threadId);
    // Bob read round 1 in Slack; Ann edits in the studio (round 2).
    const stop = (await detail(runId)).stop!;
    const edited = await as(ann, `/stops/${stop.id}/decision`, {
      method: 'POST',
      json: { decision: 'approve', round: 1, edits: { analysis: 'Second draft, by Ann.' } },
    });
    expect(edited.status).toBe(202);
    expect((await click(message, 'stop.approve', { id: bob.slackId })).status).toBe(200);
    const told = await slack.waitFor(() => slack.ephemerals().find((e) => e.user === bob.slackId));
    expect(told.text).toMatch(
      /changed since you read it: approved with edits by Ann Approver at .*it is at round 2 now/,
    );
    expect((await detail(runId)).status).toBe('waiting_approval');
    // The message shows round 2's text and buttons naming it; Bob's click on those counts.
    const updated = await slack.waitFor(() => {
      const now = slack.message(message.channel, message.ts);
      return now && buttonOf(now, 'stop.approve').round === 2 ? now : undefined;
    });
    expect(text(updated)).toContain('Second draft, by Ann.');
    expect(text(updated)).toContain('Approvals: 1 of 2');
    ctx.model.reply(['Done.']);
    await click(updated, 'stop.approve', { id: bob.slackId });
    await until(async () => (await detail(runId)).status === 'completed' || undefined, 15_000);
    expect((await decisionsOf(threadId)).map((d) => [d.decided_by.name, d.decision, d.via])).toEqual([
      ['Ann Approver', 'edit', null],
      ['Bob Approver', 'approve', 'slack'],
    ]);
  });

  it('links by a verified email only, and counts one approval at most through links it made', async () => {
    const { rows } = await server.pool.query<{ id: string }>(
      `INSERT INTO svc_users (id, issuer, subject, name, email, email_verified)
       VALUES (gen_random_uuid(), 'test', gen_random_uuid()::text, 'Eve Email', 'eve@example.test', true),
              (gen_random_uuid(), 'test', gen_random_uuid()::text, 'Fay Email', 'fay@example.test', true),
              (gen_random_uuid(), 'test', gen_random_uuid()::text, 'Gus Unverified', 'gus@example.test', false)
       RETURNING id`,
    );
    for (const { id } of rows) await grantRole(server.pool, id, 'project', DEFAULT_PROJECT_ID, 'member');
    slack.addUser({ id: 'U0EVE00001', name: 'eve', email: 'eve@example.test' });
    slack.addUser({ id: 'U0FAY00001', name: 'fay', email: 'FAY@example.test' });
    slack.addUser({ id: 'U0GUS00001', name: 'gus', email: 'gus@example.test' });

    const { runId, threadId } = await toGate('slack-pair');
    const message = await postedMessage(threadId);
    await click(message, 'stop.approve', { id: 'U0GUS00001' });
    await slack.waitFor(() => slack.ephemerals().find((e) => e.user === 'U0GUS00001' && /not linked/.test(e.text)));
    await click(message, 'stop.approve', { id: 'U0EVE00001' });
    await until(async () => (await decisionsOf(threadId)).length === 1 || undefined, 10_000);
    await click(message, 'stop.approve', { id: 'U0FAY00001' });
    const told = await slack.waitFor(() => slack.ephemerals().find((e) => e.user === 'U0FAY00001'));
    expect(told.text).toMatch(/already has an approval through Slack.*link it yourself/);
    expect((await decisionsOf(threadId)).map((d) => [d.decided_by.name, d.via])).toEqual([['Eve Email', 'slack']]);
    expect((await detail(runId)).status).toBe('waiting_approval');
  });

  it('keeps deciding while Slack is away, and retries the message where the connection shows it', async () => {
    slack.failNext('chat.postMessage', 2, { status: 503 });
    const { runId, threadId } = await toGate('slack-review');
    await until(async () => {
      const shown = (await (await server.request(`/orgs/${DEFAULT_ORG_ID}/slack`)).json()) as SlackConnection;
      const latest = shown.deliveries.find((d) => d.stop_id.startsWith(runId));
      return (latest !== undefined && latest.attempts >= 1 && latest.last_error !== null) || undefined;
    }, 10_000);
    const waiting = (await (await server.request('/approvals')).json()) as ApprovalItem[];
    const item = waiting.find((i) => i.run_id === runId)!;
    expect(item.sent_to[0]).toMatchObject({
      via: 'slack',
      status: 'pending',
      error: expect.stringMatching(/HTTP 503/),
    });
    // A decision elsewhere does not wait for Slack.
    ctx.model.reply(['Done.']);
    const decided = await server.request(`/stops/${item.stop.id}/decision`, {
      method: 'POST',
      json: { decision: 'approve', round: 1 },
    });
    expect(decided.status).toBe(202);
    // Slack back: the message is posted, already saying how the stop ended.
    const message = await postedMessage(threadId);
    await slack.waitFor(
      () => text(slack.message(message.channel, message.ts)).includes('Approved by api-token') || undefined,
      20_000,
    );
  });
});

describe('a tool call in Slack', () => {
  it('is posted with its arguments; Edit refuses arguments outside the schema in the modal, then approves them', async () => {
    const owner = await person('Tom Owner', 'owner');
    const file = path.join(project, 'effects.log');
    ctx.model.toolTurns = [[{ name: 'mock__append', arguments: { file, line: 'from <b>the model</b>' } }]];
    const events = await readEvents(
      await server.request('/graphs/tool-review/run', {
        method: 'POST',
        json: { message: 'append a line', project_path: project },
      }),
    );
    const { run_id: runId, thread_id: threadId } = events[0]!.data as { run_id: string; thread_id: string };
    const message = await postedMessage(threadId);
    expect(text(message)).toContain('mock.append');
    expect(text(message)).toContain('from &lt;b&gt;the model&lt;/b&gt;');
    const stop = (await detail(runId)).stop!;
    expect(stop.kind).toBe('tool_call');
    expect(buttonOf(message, 'stop.edit')).toMatchObject({ stop: stop.id, round: 1 });

    await click(message, 'stop.edit', { id: owner.slackId });
    const opened = await slack.waitFor(() => slack.views()[0]);
    const submit = (value: string) =>
      slack.interact(
        interactions,
        slack.viewSubmissionPayload({
          user: { id: owner.slackId },
          view: opened.view,
          values: { arguments: { value: { type: 'plain_text_input', value } } },
        }),
      );
    const outside = await submit(JSON.stringify({ file, line: 42 }));
    expect(outside.json).toMatchObject({
      response_action: 'errors',
      errors: { arguments: expect.stringMatching(/input schema of mock\.append/) },
    });
    expect((await submit('{not json')).json).toMatchObject({
      errors: { arguments: expect.stringMatching(/^Not JSON/) },
    });
    expect((await detail(runId)).status).toBe('waiting_approval');

    ctx.model.reply(['Appended.']);
    expect((await submit(JSON.stringify({ file, line: 'edited in Slack' }))).json).toEqual({
      response_action: 'clear',
    });
    // The call ran as edited, and the run went on to its review gate.
    await until(async () => (await detail(runId)).stop?.kind === 'gate' || undefined, 20_000);
    expect(fs.readFileSync(file, 'utf8').trim().split('\n')).toEqual(['edited in Slack']);
    await slack.waitFor(
      () =>
        text(slack.message(message.channel, message.ts)).includes('Approved with edits by Tom Owner via Slack') ||
        undefined,
    );
  });
});
