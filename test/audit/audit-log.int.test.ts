import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditAction, AuditEvent, AuditPage } from '../../src-server/contracts/audit';
import type { Manifest } from '../../src-server/contracts/assets';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID, DEFAULT_TEAM_ID } from '../../src-server/contracts/tenancy';
import { reviewAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import { requestServer, type TestRequestInit } from '../helpers/request';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { startSlackStandIn, type SlackStandIn } from '../helpers/slack-stand-in';
import { readEvents } from '../helpers/sse';

/**
 * The audit log (docs/audit.md) on a real server and PostgreSQL, with authentication on and people of two tenants:
 * every kind of change leaves an entry with who made it, how she was signed in, and what it was before and after;
 * the administrators of a project or organisation read theirs (another tenant gets 404, a member below admin 403);
 * pages follow each other; no credential's value is ever in it; and the database refuses to change or delete an entry,
 * even when the service's own user asks, and keeps them when their project is deleted.
 */
const SECRET = 'a-session-secret-for-the-audit-tests-0123456789';
const API_TOKEN = 'audit-test-admin-token-0123456789';
const PROJECT = DEFAULT_PROJECT_ID;
const ORG = DEFAULT_ORG_ID;

/** Values that are credentials: none may appear anywhere in the log. */
const TRACKER_TOKEN = 'tracker-secret-value-9f8e7d6c5b4a';
const SMTP_PASSWORD = 'smtp-password-1a2b3c4d5e6f';

/** The review agent whose intake writes one file of its project: write_file asks, and a member decides. */
const writerAgent: Manifest = {
  ...reviewAgent,
  name: 'writer',
  source: 'assets/agents/writer.md',
  phases: reviewAgent.phases.map((p) =>
    p.id === 'intake' ? { ...p, tools: { tools: ['project.write_file'], max_tool_calls: 1 } } : p,
  ),
};

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let slack: SlackStandIn;
let catalog: string;
const roots = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'audit-log-')));

/** The people: Ada administers the default project, Olga the default organisation, Max is a member of the project;
 * Mallory administers another organisation; Val is the one whose role changes. */
const people = {} as Record<'ada' | 'olga' | 'max' | 'mallory' | 'val', { id: string; token: string }>;
let otherOrg: string;
/** Credentials the changes made, each to be looked for in every answer of the log. */
const credentials: string[] = [TRACKER_TOKEN, SMTP_PASSWORD];
/** Ids of what the changes made, for the checks. */
const made = {} as {
  personalToken: string;
  webhook: string;
  schedule: string;
  dataset: string;
  item: string;
  grant: string;
  thread: string;
  oauthClient: string;
  oauthGrant: string;
  doomedProject: string;
};

const as = (token: string | undefined, urlPath: string, init: TestRequestInit = {}) =>
  requestServer(server.url, urlPath, init, token);

/** The answer's JSON, after checking its status (the body in the message when it is another). */
async function ok<T>(response: Response, status = 200): Promise<T> {
  const text = await response.text();
  expect(response.status, `${response.url}: ${text}`).toBe(status);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Every entry the query reads, all pages, newest first, with the answers' raw text. */
async function everything(token: string, query = ''): Promise<{ events: AuditEvent[]; texts: string[] }> {
  const events: AuditEvent[] = [];
  const texts: string[] = [];
  let next: string | null = null;
  do {
    const res = await as(token, `/audit?limit=200${query}${next ? `&before_id=${next}` : ''}`);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    texts.push(text);
    const page = JSON.parse(text) as AuditPage;
    events.push(...page.events);
    next = page.next;
  } while (next);
  return { events, texts };
}

let all: AuditEvent[];
const entries = (action: AuditAction, target?: string | RegExp) =>
  all.filter(
    (e) =>
      e.action === action &&
      (target === undefined || (typeof target === 'string' ? e.target === target : target.test(e.target))),
  );
/** The one entry of that action (and target): oldest first when there are several, `n` picks. */
function entry(action: AuditAction, target?: string | RegExp, n = 0): AuditEvent {
  const found = entries(action, target).reverse();
  expect(
    found.length,
    `${action} ${String(target ?? '')}: ${JSON.stringify(all.map((e) => e.action))}`,
  ).toBeGreaterThan(n);
  return found[n]!;
}

beforeAll(async () => {
  slack = await startSlackStandIn();
  catalog = await writeFixtureCatalog([writerAgent]);
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: catalog,
    PROJECT_ROOTS: roots,
    SLACK_API_URL: slack.apiUrl,
    // Signing MCP clients in needs an identity provider; registering one never reaches it.
    OIDC_ISSUER_URL: 'http://127.0.0.1:9/issuer',
    // The mail server of the test is on loopback.
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  });
  const person = async (name: string, roles: Parameters<typeof addUser>[2]) => {
    const id = await addUser(server.pool, name, roles);
    return { id, token: await signSession(id, SECRET, '1h', name) };
  };
  otherOrg = randomUUID();
  const [otherTeam, otherProject] = [randomUUID(), randomUUID()];
  await server.pool.query(`INSERT INTO svc_orgs (id, name) VALUES ($1, 'Other org')`, [otherOrg]);
  await server.pool.query(`INSERT INTO svc_teams (id, org_id, name) VALUES ($1, $2, 'Other team')`, [
    otherTeam,
    otherOrg,
  ]);
  await server.pool.query(`INSERT INTO svc_projects (id, team_id, name) VALUES ($1, $2, 'Other project')`, [
    otherProject,
    otherTeam,
  ]);
  people.ada = await person('Ada', [['project', PROJECT, 'admin']]);
  people.olga = await person('Olga', [['org', ORG, 'admin']]);
  people.max = await person('Max', [['project', PROJECT, 'member']]);
  people.mallory = await person('Mallory', [['org', otherOrg, 'admin']]);
  people.val = await person('Val', []);
  await makeEveryChange();
  ({ events: all } = await everything(API_TOKEN));
});

afterAll(async () => {
  await server?.close();
  await slack?.close();
  if (catalog) fs.rmSync(catalog, { recursive: true, force: true });
  fs.rmSync(roots, { recursive: true, force: true });
});

/** One change of every kind the log records, by the people who may make it. */
async function makeEveryChange(): Promise<void> {
  const { ada, olga } = people;

  // Roles: Val becomes a member of the project, then a viewer, then nothing.
  const member = `/projects/${PROJECT}/members/${people.val.id}`;
  await ok(await as(ada.token, member, { method: 'PUT', json: { role: 'member' } }));
  await ok(await as(ada.token, member, { method: 'PUT', json: { role: 'viewer' } }));
  await ok(await as(ada.token, member, { method: 'DELETE' }), 204);

  // A personal access token, used once (the dataset below is made with it), then revoked.
  const token = await ok<{ id: string; token: string }>(
    await as(ada.token, '/me/tokens', { method: 'POST', json: { name: 'Ada laptop' } }),
    201,
  );
  made.personalToken = token.id;
  credentials.push(token.token);

  // Datasets, through the personal token: made, an item added, changed and deleted, then the dataset deleted.
  const dataset = await ok<{ id: string }>(
    await as(token.token, `/projects/${PROJECT}/datasets`, { method: 'POST', json: { name: 'Audit cases' } }),
    201,
  );
  made.dataset = dataset.id;
  const item = await ok<{ id: string }>(
    await as(ada.token, `/datasets/${dataset.id}/items`, { method: 'POST', json: { message: 'Review this' } }),
    201,
  );
  made.item = item.id;
  await ok(
    await as(ada.token, `/datasets/${dataset.id}/items/${item.id}`, {
      method: 'PATCH',
      json: { expected: 'A careful review' },
    }),
  );
  await ok(await as(ada.token, `/datasets/${dataset.id}/items/${item.id}`, { method: 'DELETE' }), 204);
  await ok(await as(ada.token, `/datasets/${dataset.id}`, { method: 'DELETE' }), 204);
  await ok(await as(ada.token, `/me/tokens/${token.id}/revoke`, { method: 'POST' }), 204);

  // Phase configuration: the project's notes, then a routing rule (past the gate) beside them, then removed; and
  // the organisation's.
  const config = `/agents/review/nodes/analysis/config?project_id=${PROJECT}`;
  await ok(await as(ada.token, config, { method: 'PUT', json: { notes: 'Be brief.' } }));
  const rule = { condition: 'contains', match: 'trivial', target: 'output', priority: 10 };
  await ok(await as(ada.token, config, { method: 'PUT', json: { notes: 'Be brief.', routing_overrides: [rule] } }));
  await ok(await as(ada.token, config, { method: 'DELETE' }), 204);
  await ok(
    await as(olga.token, `/agents/review/nodes/analysis/config?org_id=${ORG}`, {
      method: 'PUT',
      json: { notes: 'Organisation notes' },
    }),
  );

  // A webhook of the project, then deleted; its signing secret is a credential.
  const webhook = await ok<{ id: string; secret: string }>(
    await as(ada.token, '/webhooks', {
      method: 'POST',
      json: { url: 'https://192.0.2.10/hooks/a-secret-path', events: ['run.failed'], project_id: PROJECT },
    }),
    201,
  );
  made.webhook = webhook.id;
  credentials.push(webhook.secret, 'a-secret-path');
  await ok(await as(ada.token, `/webhooks/${webhook.id}`, { method: 'DELETE' }), 204);

  // A schedule: made, changed, paused, deleted.
  const schedule = await ok<{ id: string }>(
    await as(ada.token, `/projects/${PROJECT}/schedules`, {
      method: 'POST',
      json: { agent: 'summary', cron: '0 0 1 1 *', timezone: 'UTC', message: 'Yearly summary' },
    }),
    201,
  );
  made.schedule = schedule.id;
  await ok(await as(ada.token, `/schedules/${schedule.id}`, { method: 'PATCH', json: { cron: '0 0 2 1 *' } }));
  await ok(await as(ada.token, `/schedules/${schedule.id}/pause`, { method: 'POST' }));
  await ok(await as(ada.token, `/schedules/${schedule.id}`, { method: 'DELETE' }), 204);

  // The organisation's floor of tool policies: one pattern set, then removed.
  const floor = `/orgs/${ORG}/tool-policies`;
  await ok(
    await as(olga.token, floor, {
      method: 'PUT',
      json: { policies: { 'mock.echo': { policy: 'ask', decide_role: 'owner' } } },
    }),
  );
  await ok(await as(olga.token, floor, { method: 'PUT', json: { policies: {} } }));

  // A tool grant: the writer's write_file call approved by Ada for the rest of its thread, then revoked.
  const folder = fs.mkdtempSync(path.join(roots, 'project-'));
  ctx.model.toolTurns = [[{ name: 'project__write_file', arguments: { path: 'notes.md', content: 'audit' } }]];
  const events = await readEvents(
    await as(API_TOKEN, '/graphs/writer/run', {
      method: 'POST',
      json: { message: 'write it down', project_id: PROJECT, project_path: folder },
    }),
  );
  const started = events[0]!.data as { run_id: string; thread_id: string };
  const waiting = events.at(-1)!.data as { type: string; tool_call?: { call_id: string } };
  expect(waiting.type).toBe('tool_waiting');
  made.thread = started.thread_id;
  const decided = await ok<{ stream_url: string }>(
    await as(ada.token, `/threads/${started.thread_id}/tool-calls/${waiting.tool_call!.call_id}/approve`, {
      method: 'POST',
      json: { allow_for_thread: true },
    }),
    202,
  );
  await readEvents(await as(ada.token, decided.stream_url));
  const grants = await ok<{ id: string }[]>(await as(ada.token, `/threads/${started.thread_id}/tool-grants`));
  made.grant = grants[0]!.id;
  await ok(await as(ada.token, `/threads/${started.thread_id}/tool-grants/${made.grant}/revoke`, { method: 'POST' }));

  // Retention of the project.
  await ok(
    await as(ada.token, `/projects/${PROJECT}/retention`, {
      method: 'PUT',
      json: { keep_finished_threads_days: 30, prune_checkpoints: true },
    }),
  );

  // A stored agent: made, a new version, shared by the organisation's admin, deleted.
  const source = (prompt: string) => `---\nname: audited\ndescription: An agent of the audit test\n---\n${prompt}\n`;
  await ok(
    await as(ada.token, `/projects/${PROJECT}/agents`, { method: 'POST', json: { source: source('First.') } }),
    201,
  );
  await ok(
    await as(ada.token, `/agents/audited?project_id=${PROJECT}`, {
      method: 'PUT',
      json: { source: source('Second.') },
    }),
  );
  await ok(
    await as(olga.token, `/agents/audited/shared?project_id=${PROJECT}`, { method: 'PUT', json: { shared: true } }),
  );
  await ok(await as(ada.token, `/agents/audited?project_id=${PROJECT}`, { method: 'DELETE' }), 204);

  // Slack: the organisation connects its workspace, gives the project a channel, takes it back, disconnects.
  await ok(
    await as(olga.token, `/orgs/${ORG}/slack`, {
      method: 'PUT',
      json: { bot_token: slack.botToken, signing_secret: slack.signingSecret, channel: '#approvals' },
    }),
  );
  credentials.push(slack.botToken, slack.signingSecret);
  await ok(await as(olga.token, `/projects/${PROJECT}/slack`, { method: 'PUT', json: { channel: '#audit' } }));
  await ok(await as(olga.token, `/projects/${PROJECT}/slack`, { method: 'PUT', json: { channel: null } }));
  await ok(await as(olga.token, `/orgs/${ORG}/slack`, { method: 'DELETE' }), 204);

  // Mail: the instance's server (its password a credential), and whom the project's stops are mailed to.
  await ok(
    await as(API_TOKEN, '/settings/email', {
      method: 'PUT',
      json: {
        host: '127.0.0.1',
        port: 2525,
        secure: false,
        from: 'agents@example.com',
        user: 'mailer',
        password: SMTP_PASSWORD,
      },
    }),
  );
  await ok(await as(ada.token, `/projects/${PROJECT}/email`, { method: 'PUT', json: { recipients: 'deciders' } }));
  await ok(await as(ada.token, `/projects/${PROJECT}/email`, { method: 'PUT', json: { recipients: null } }));

  // OAuth: a client registers itself (no one is signed in), and Ada revokes its sign-in.
  const registered = await ok<{ client_id: string }>(
    await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Audit assistant',
        redirect_uris: ['http://127.0.0.1:47123/oauth/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    }),
    201,
  );
  made.oauthClient = registered.client_id;
  // The sign-in itself needs the identity provider (test/mcp/mcp-oauth.int.test.ts goes through it): here it is
  // written as the exchange of a code writes it.
  made.oauthGrant = randomUUID();
  await server.pool.query(
    `INSERT INTO svc_oauth_grants (id, user_id, client_id, client_name, scopes, resource)
     VALUES ($1, $2, $3, 'Audit assistant', ARRAY['mcp'], $4)`,
    [made.oauthGrant, ada.id, registered.client_id, `${server.url}/mcp`],
  );
  await ok(await as(ada.token, `/me/mcp-grants/${made.oauthGrant}/revoke`, { method: 'POST' }), 204);

  // A project secret: its name is recorded, never its value.
  await ok(
    await as(ada.token, `/projects/${PROJECT}/secrets/TRACKER_TOKEN`, {
      method: 'PUT',
      json: { value: TRACKER_TOKEN },
    }),
  );

  // A project with an entry of its own, then deleted.
  const doomed = await ok<{ id: string }>(
    await as(API_TOKEN, '/projects', { method: 'POST', json: { name: 'Doomed', parent_id: DEFAULT_TEAM_ID } }),
    201,
  );
  made.doomedProject = doomed.id;
  await ok(
    await as(API_TOKEN, `/projects/${doomed.id}/retention`, {
      method: 'PUT',
      json: { keep_finished_threads_days: 7, prune_checkpoints: false },
    }),
  );
  await ok(await as(API_TOKEN, `/projects/${doomed.id}`, { method: 'DELETE' }), 204);
}

describe('the audit log records every kind of change', () => {
  it('roles: granted, changed and removed, with the role before and after', () => {
    const target = `user ${people.val.id} on project ${PROJECT}`;
    const granted = entry('role.set', target, 0);
    expect(granted).toMatchObject({
      actor: { id: people.ada.id, name: 'Ada' },
      via: 'session',
      org_id: ORG,
      project_id: PROJECT,
      before: null,
    });
    expect(granted.after).toEqual({ user_id: people.val.id, scope: 'project', scope_id: PROJECT, role: 'member' });
    const changed = entry('role.set', target, 1);
    expect(changed.before).toEqual({ user_id: people.val.id, scope: 'project', scope_id: PROJECT, role: 'member' });
    expect(changed.after).toEqual({ user_id: people.val.id, scope: 'project', scope_id: PROJECT, role: 'viewer' });
    const removed = entry('role.removed', target);
    expect(removed).toMatchObject({ actor: { name: 'Ada' }, after: null });
    expect(removed.before).toMatchObject({ role: 'viewer' });
    // From the request's address.
    expect(removed.ip).toMatch(/127\.0\.0\.1$/);
  });

  it('personal tokens: made and revoked, by name, never the token', () => {
    const target = `personal access token ${made.personalToken}`;
    const created = entry('token.created', target);
    expect(created).toMatchObject({ actor: { name: 'Ada' }, via: 'session', org_id: null, project_id: null });
    expect(created.before).toBeNull();
    expect(created.after).toMatchObject({ id: made.personalToken, name: 'Ada laptop', expires_at: null });
    const revoked = entry('token.revoked', target);
    expect(revoked.before).toMatchObject({ name: 'Ada laptop' });
    expect(revoked.after).toBeNull();
  });

  it('phase configuration and routing rules, apart', () => {
    const target = 'review analysis';
    const project = entries('phase_config.set', target)
      .filter((e) => e.project_id === PROJECT)
      .reverse();
    expect(project).toHaveLength(2);
    expect(project[0]).toMatchObject({ actor: { name: 'Ada' }, before: null });
    expect(project[0]!.after).toEqual({ instructions_override: null, classification_labels: null, notes: 'Be brief.' });
    // The second save changed the rules only: no phase_config.set for it; the removal's is the second.
    expect(project[1]!.before).toEqual({
      instructions_override: null,
      classification_labels: null,
      notes: 'Be brief.',
    });
    expect(project[1]!.after).toBeNull();
    const rules = entries('routing_rules.set', target).reverse();
    expect(rules).toHaveLength(2);
    const rule = { condition: 'contains', match: 'trivial', target: 'output', priority: 10 };
    expect(rules[0]).toMatchObject({ project_id: PROJECT, before: null, after: { routing_overrides: [rule] } });
    expect(rules[1]).toMatchObject({ before: { routing_overrides: [rule] }, after: null });
    const org = entries('phase_config.set', target).find((e) => e.project_id === null);
    expect(org).toMatchObject({ actor: { name: 'Olga' }, org_id: ORG, after: { notes: 'Organisation notes' } });
  });

  it('webhooks: made and deleted, by origin, never the signing secret', () => {
    const target = `webhook ${made.webhook}`;
    const after = { id: made.webhook, url: 'https://192.0.2.10', events: ['run.failed'] };
    expect(entry('webhook.created', target)).toMatchObject({ project_id: PROJECT, before: null, after });
    expect(entry('webhook.deleted', target)).toMatchObject({ before: after, after: null });
  });

  it('schedules: made, changed, paused and deleted', () => {
    const target = `schedule ${made.schedule}`;
    const created = entry('schedule.created', target);
    expect(created).toMatchObject({ actor: { name: 'Ada' }, project_id: PROJECT, before: null });
    expect(created.after).toMatchObject({ agent: 'summary', cron: '0 0 1 1 *', message: 'Yearly summary' });
    const changed = entry('schedule.changed', target, 0);
    expect(changed.before).toMatchObject({ cron: '0 0 1 1 *', paused: false });
    expect(changed.after).toMatchObject({ cron: '0 0 2 1 *', paused: false, runs_as: { id: people.ada.id } });
    const paused = entry('schedule.changed', target, 1);
    expect(paused).toMatchObject({ before: { paused: false }, after: { paused: true } });
    expect(entry('schedule.deleted', target)).toMatchObject({ before: { cron: '0 0 2 1 *' }, after: null });
  });

  it("the organisation's tool policies: a pattern set, then removed", () => {
    const policy = { tool: 'mock.echo', policy: 'ask', ask: { decide_role: 'owner', approvals: 1, expiry: null } };
    expect(entry('tool_policy.set', 'tool policy mock.echo')).toMatchObject({
      actor: { name: 'Olga' },
      org_id: ORG,
      project_id: null,
      before: null,
      after: policy,
    });
    expect(entry('tool_policy.removed', 'tool policy mock.echo')).toMatchObject({ before: policy, after: null });
  });

  it('tool grants: made on an approval for the thread, and revoked', () => {
    const target = new RegExp(`^tool grant ${made.grant}: project\\.write_file on thread ${made.thread}$`);
    const created = entry('tool_grant.created', target);
    expect(created).toMatchObject({ actor: { id: people.ada.id, name: 'Ada' }, project_id: PROJECT, before: null });
    expect(created.after).toMatchObject({ id: made.grant, thread_id: made.thread, tool: 'project.write_file' });
    expect(entry('tool_grant.revoked', target)).toMatchObject({ before: { id: made.grant }, after: null });
  });

  it('retention: what it was (the defaults) and what it became', () => {
    const set = entry('retention.set', `retention of project ${PROJECT}`);
    expect(set.before).toEqual({ keep_finished_threads_days: null, prune_checkpoints: false });
    expect(set.after).toEqual({ keep_finished_threads_days: 30, prune_checkpoints: true });
  });

  it('stored agents: made, a new version, shared, deleted; never their source', () => {
    const target = 'agent audited';
    expect(entry('agent.created', target)).toMatchObject({
      project_id: PROJECT,
      before: null,
      after: { name: 'audited', kind: 'agent', version: '1', shared: false },
    });
    const versions = entries('agent.changed', target).reverse();
    expect(versions.map((e) => [e.actor.name, e.before, e.after])).toEqual([
      [
        'Ada',
        { name: 'audited', kind: 'agent', version: '1', shared: false },
        { name: 'audited', kind: 'agent', version: '2', shared: false },
      ],
      [
        'Olga',
        { name: 'audited', kind: 'agent', version: '2', shared: false },
        { name: 'audited', kind: 'agent', version: '2', shared: true },
      ],
    ]);
    expect(entry('agent.deleted', target)).toMatchObject({ before: { version: '2', shared: true }, after: null });
    expect(JSON.stringify(entries('agent.changed'))).not.toContain('Second.');
  });

  it('Slack: the connection and a project channel, without the token or signing secret', () => {
    const connection = `Slack connection of organisation ${ORG}`;
    const kept = { team_id: expect.any(String), channel: '#approvals' };
    expect(entry('slack.set', connection)).toMatchObject({ actor: { name: 'Olga' }, org_id: ORG, before: null });
    expect(entry('slack.set', connection).after).toMatchObject(kept);
    expect(entry('slack.removed', connection)).toMatchObject({ before: kept, after: null });
    const channel = `Slack channel of project ${PROJECT}`;
    expect(entry('slack.set', channel)).toMatchObject({
      project_id: PROJECT,
      before: null,
      after: { channel: '#audit' },
    });
    expect(entry('slack.removed', channel)).toMatchObject({ before: { channel: '#audit' }, after: null });
  });

  it("mail: the instance's server (whether a password is kept, not which) and a project's recipients", () => {
    const mailServer = entry('email.set', 'mail server');
    expect(mailServer).toMatchObject({ actor: { name: 'api-token' }, via: 'api_token', org_id: null, before: null });
    expect(mailServer.after).toEqual({
      host: '127.0.0.1',
      port: 2525,
      secure: false,
      from: 'agents@example.com',
      user: 'mailer',
      has_password: true,
    });
    const recipients = `mail recipients of project ${PROJECT}`;
    expect(entry('email.set', recipients)).toMatchObject({ before: null, after: { recipients: 'deciders' } });
    expect(entry('email.removed', recipients)).toMatchObject({ before: { recipients: 'deciders' }, after: null });
  });

  it("OAuth: a client's registration, by whoever it was (a visitor), and a person's revoking of its sign-in", () => {
    const registered = entry('oauth_client.registered', `OAuth client ${made.oauthClient}`);
    expect(registered).toMatchObject({ actor: { name: 'visitor' }, via: 'anonymous', before: null });
    // Outside the API's routes too, from the address it came from.
    expect(registered.ip).toMatch(/127\.0\.0\.1$/);
    expect(registered.after).toMatchObject({
      client_id: made.oauthClient,
      client_name: 'Audit assistant',
      redirect_uris: ['http://127.0.0.1:47123/oauth/callback'],
    });
    const revoked = entry('oauth_grant.revoked', `MCP client sign-in ${made.oauthGrant}`);
    expect(revoked).toMatchObject({ actor: { id: people.ada.id, name: 'Ada' }, via: 'session', after: null });
    expect(revoked.before).toEqual({
      id: made.oauthGrant,
      client_id: made.oauthClient,
      client_name: 'Audit assistant',
      scopes: ['mcp'],
    });
  });

  it('datasets and their items; made through a personal token, so said', () => {
    const dataset = `dataset ${made.dataset} (Audit cases)`;
    expect(entry('dataset.created', dataset)).toMatchObject({
      actor: { id: people.ada.id, name: 'Ada' },
      via: 'personal_token',
      project_id: PROJECT,
      before: null,
      after: { name: 'Audit cases', description: null },
    });
    const item = `item ${made.item} of dataset ${made.dataset} (Audit cases)`;
    const added = { position: 1, message: 'Review this', expected: null, checks: [], source_run_id: null };
    expect(entry('dataset_item.added', item)).toMatchObject({ via: 'session', before: null, after: added });
    const changed = entry('dataset_item.changed', item);
    expect(changed.before).toEqual(added);
    expect(changed.after).toEqual({ ...added, expected: 'A careful review' });
    expect(entry('dataset_item.deleted', item)).toMatchObject({
      before: { expected: 'A careful review' },
      after: null,
    });
    expect(entry('dataset.deleted', dataset)).toMatchObject({ before: { name: 'Audit cases' }, after: null });
  });

  it('secrets: by name only', () => {
    const set = entry('secret.set', 'TRACKER_TOKEN');
    expect(set).toMatchObject({ actor: { name: 'Ada' }, project_id: PROJECT, before: null });
    expect(set.after).toMatchObject({ name: 'TRACKER_TOKEN' });
  });
});

describe('who reads the audit log', () => {
  it("a project's admin reads its entries, and only them", async () => {
    const { events } = await everything(people.ada.token, `&project_id=${PROJECT}`);
    expect(events.length).toBeGreaterThan(20);
    expect(events.every((e) => e.project_id === PROJECT)).toBe(true);
    const actions = new Set(events.map((e) => e.action));
    for (const action of ['role.set', 'dataset.created', 'schedule.changed', 'tool_grant.created', 'secret.set']) {
      expect(actions, action).toContain(action);
    }
    // Filters: one action, one actor.
    const filtered = await ok<AuditPage>(
      await as(people.ada.token, `/audit?project_id=${PROJECT}&action=schedule.changed&actor_id=${people.ada.id}`),
    );
    expect(filtered.events.map((e) => e.action)).toEqual(['schedule.changed', 'schedule.changed']);
  });

  it("an organisation's admin reads its own entries and its projects'", async () => {
    const { events } = await everything(people.olga.token, `&org_id=${ORG}`);
    expect(events.every((e) => e.org_id === ORG)).toBe(true);
    expect(events.some((e) => e.project_id === PROJECT && e.action === 'retention.set')).toBe(true);
    expect(events.some((e) => e.project_id === null && e.action === 'tool_policy.set')).toBe(true);
    // Instance-wide entries (a person's tokens, the mail server) are not the organisation's.
    expect(events.some((e) => e.action === 'token.created' || e.target === 'mail server')).toBe(false);
  });

  it('another tenant gets 404 for the project and the organisation, and sees nothing of them in her own', async () => {
    const { mallory } = people;
    expect((await as(mallory.token, `/audit?project_id=${PROJECT}`)).status).toBe(404);
    expect((await as(mallory.token, `/audit?org_id=${ORG}`)).status).toBe(404);
    const own = await ok<AuditPage>(await as(mallory.token, `/audit?org_id=${otherOrg}`));
    expect(own).toEqual({ events: [], next: null });
  });

  it('a member below admin gets 403; the whole log is for instance administrators', async () => {
    expect((await as(people.max.token, `/audit?project_id=${PROJECT}`)).status).toBe(403);
    expect((await as(people.max.token, `/audit?org_id=${ORG}`)).status).toBe(403);
    expect((await as(people.ada.token, '/audit')).status).toBe(403);
    expect((await as(undefined, `/audit?project_id=${PROJECT}`)).status).toBe(401);
  });

  it('pages follow each other with before_id, newest first', async () => {
    const query = `/audit?project_id=${PROJECT}`;
    const six = await ok<AuditPage>(await as(people.ada.token, `${query}&limit=6`));
    const first = await ok<AuditPage>(await as(people.ada.token, `${query}&limit=3`));
    expect(first.next).toBe(first.events[2]!.id);
    const second = await ok<AuditPage>(await as(people.ada.token, `${query}&limit=3&before_id=${first.next}`));
    expect([...first.events, ...second.events]).toEqual(six.events);
    const ids = six.events.map((e) => BigInt(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));
    // The last page says so.
    const oldest = all.filter((e) => e.project_id === PROJECT).at(-1)!;
    expect(await ok<AuditPage>(await as(people.ada.token, `${query}&before_id=${oldest.id}`))).toEqual({
      events: [],
      next: null,
    });
  });
});

describe('what the audit log keeps safe', () => {
  it("no credential's value appears in any answer of the log", async () => {
    const texts = [
      ...(await everything(API_TOKEN)).texts,
      ...(await everything(people.ada.token, `&project_id=${PROJECT}`)).texts,
      ...(await everything(people.olga.token, `&org_id=${ORG}`)).texts,
    ].join('\n');
    expect(texts).toContain('TRACKER_TOKEN');
    for (const value of credentials) expect(texts, value.slice(0, 12)).not.toContain(value);
  });

  it("the database refuses an UPDATE and a DELETE, even from the service's own user", async () => {
    const client = new pg.Client({ connectionString: ctx.db.url });
    await client.connect();
    try {
      await expect(client.query(`UPDATE svc_audit_events SET target = 'rewritten'`)).rejects.toThrow(
        'the audit log is append-only: UPDATE is refused',
      );
      await expect(client.query(`DELETE FROM svc_audit_events`)).rejects.toThrow(
        'the audit log is append-only: DELETE is refused',
      );
      await expect(client.query(`TRUNCATE svc_audit_events`)).rejects.toThrow(
        'the audit log is append-only: TRUNCATE is refused',
      );
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM svc_audit_events WHERE target = 'rewritten'`,
      );
      expect(Number(rows[0]!.n)).toBe(0);
    } finally {
      await client.end();
    }
  });

  it('a deleted project leaves its entries in the log', async () => {
    expect((await as(API_TOKEN, `/projects/${made.doomedProject}`)).status).toBe(404);
    const { events } = await everything(people.olga.token, `&org_id=${ORG}`);
    const kept = events.find((e) => e.project_id === made.doomedProject);
    expect(kept).toMatchObject({
      action: 'retention.set',
      actor: { name: 'api-token' },
      via: 'api_token',
      after: { keep_finished_threads_days: 7, prune_checkpoints: false },
    });
  });
});
