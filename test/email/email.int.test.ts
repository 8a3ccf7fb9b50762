import { simpleParser, type ParsedMail } from 'mailparser';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GateDecisionRecord, RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { gatedAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { grantRole, signSession } from '../helpers/sessions';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Mail as a door to stops (docs/approvals.md#mail), end to end: the server in this process on real PostgreSQL, and a
 * real SMTP server (smtp-server) that asks for the password and receives the mails. A stop is mailed to the people who
 * may decide it, each with a link of her own; opening a link decides nothing; confirming decides once, as her; a
 * link used, expired, of an earlier round or with a changed character says so and decides nothing.
 */
const SECRET = 'a-session-secret-for-the-mail-tests-0123456789';
const API_TOKEN = 'mail-test-admin-token-0123456789';
const PUBLIC_URL = 'https://agents.example.test';
const SMTP_USER = 'agents';
const SMTP_PASSWORD = 'smtp-password-never-shown-0123';

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let smtp: SMTPServer;
let smtpPort: number;
const mails: ParsedMail[] = [];

beforeAll(async () => {
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          mails.push(mail);
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  const catalog = await writeFixtureCatalog([
    gatedAgent('mail-review', {}),
    gatedAgent('mail-pair', { approvals: 2 }),
    gatedAgent('mail-lapse', { expiry: { after_s: 1, action: 'reject', target: null } }),
  ]);
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    RUN_LEASE_S: '2',
    GENERATED_DIR: catalog,
    PUBLIC_URL,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  });
});

afterAll(async () => {
  await server?.close();
  await new Promise<void>((resolve) => smtp?.close(() => resolve()));
});

type Person = { id: string; name: string; email: string; token: string };

/** A signed-in person with an address and a role on the default project. */
async function person(name: string, role: 'viewer' | 'member' | 'owner'): Promise<Person> {
  const email = `${name.toLowerCase().replace(/\W+/g, '.')}.${Date.now() % 100000}@example.test`;
  const { rows } = await server.pool.query<{ id: string }>(
    `INSERT INTO svc_users (id, issuer, subject, name, email, email_verified)
     VALUES (gen_random_uuid(), 'test', gen_random_uuid()::text, $1, $2, true) RETURNING id`,
    [name, email],
  );
  const id = rows[0]!.id;
  await grantRole(server.pool, id, 'project', DEFAULT_PROJECT_ID, role);
  return { id, name, email, token: await signSession(id, SECRET, '1h', name) };
}

const as = (caller: Person, to: string, init: { method?: string; json?: unknown } = {}) =>
  server.request(to, { ...init, headers: { authorization: `Bearer ${caller.token}` } });

async function toGate(agent: string, text = 'Ship it <script>alert(1)</script> & more.') {
  ctx.model.reply([text]);
  const events = await readEvents(
    await server.request(`/graphs/${agent}/run`, { method: 'POST', json: { message: `Review for ${agent}` } }),
  );
  expect(events.at(-1)!.data.type).toBe('gate_waiting');
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { runId: start.run_id, threadId: start.thread_id };
}

const detail = async (runId: string) => (await (await server.request(`/runs/${runId}`)).json()) as RunDetail;
const decisionsOf = async (threadId: string) =>
  (await (await server.request(`/threads/${threadId}/decisions`)).json()) as GateDecisionRecord[];

/** The mail a person got about a thread (it links the thread). */
const mailTo = (who: Person, threadId: string) =>
  until(async () => mails.find((m) => m.text?.includes(threadId) && JSON.stringify(m.to).includes(who.email)));

/** The path of the decision link in a mail. */
function linkOf(mail: ParsedMail): string {
  const match = /https:\/\/agents\.example\.test(\/stop-links\/[A-Za-z0-9_-]{43})/.exec(mail.text ?? '');
  if (!match) throw new Error(`no decision link in ${mail.text}`);
  return match[1]!;
}

/** A link opened or confirmed as a browser does: no token, no cookie. */
const open = (path: string) => fetch(`${server.url}${path}`, { headers: { accept: 'text/html' } });
const confirm = (path: string, form: Record<string, string>) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    body: new URLSearchParams(form).toString(),
  });

describe('the mail server', () => {
  it("is the instance administrator's: its password kept sealed and never shown, a test mail through it", async () => {
    const owner = await person('Omar Owner', 'owner');
    const settings = { host: '127.0.0.1', port: smtpPort, secure: false, from: 'agents@example.test' };
    expect((await as(owner, '/settings/email', { method: 'PUT', json: settings })).status).toBe(403);
    const saved = await server.request('/settings/email', {
      method: 'PUT',
      json: { ...settings, user: SMTP_USER, password: SMTP_PASSWORD },
    });
    expect(saved.status).toBe(200);
    const shown = await (await server.request('/settings/email')).json();
    expect(shown).toMatchObject({ host: '127.0.0.1', port: smtpPort, user: SMTP_USER, password_set: true });
    expect(JSON.stringify(shown)).not.toContain(SMTP_PASSWORD);
    const { rows } = await server.pool.query(`SELECT value FROM svc_instance_settings WHERE key = 'email'`);
    expect(JSON.stringify(rows)).not.toContain(SMTP_PASSWORD);

    const tested = await server.request('/settings/email/test', { method: 'POST', json: { to: 'ops@example.test' } });
    expect(tested.status).toBe(200);
    await until(async () => mails.find((m) => m.subject === 'A test from the agent service'));
    expect(server.logs.join('\n')).not.toContain(SMTP_PASSWORD);
  });

  it("refuses a host on the server's own network unless WEBHOOK_ALLOW_PRIVATE_URLS allows it", async () => {
    const strict = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN });
    try {
      const refused = await strict.request('/settings/email', {
        method: 'PUT',
        json: { host: '127.0.0.1', port: smtpPort, secure: false, from: 'agents@example.test' },
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
        /127\.0\.0\.1 resolves to an address on the server's own network .*WEBHOOK_ALLOW_PRIVATE_URLS=true/,
      );
    } finally {
      await strict.close();
    }
  });
});

describe('a stop by mail', () => {
  it('reaches the deciders with a link each; opening it decides nothing; confirming decides once, as her', async () => {
    const owner = await person('Olga Owner', 'owner');
    const member = await person('Mia Member', 'member');
    const viewer = await person('Vic Viewer', 'viewer');
    const set = await server.request(`/orgs/${DEFAULT_ORG_ID}/email`, {
      method: 'PUT',
      json: { recipients: 'deciders' },
    });
    expect(set.status).toBe(200);
    expect(
      (await as(member, `/orgs/${DEFAULT_ORG_ID}/email`, { method: 'PUT', json: { recipients: null } })).status,
    ).toBe(403);

    const { runId, threadId } = await toGate('mail-review');
    const toMember = await mailTo(member, threadId);
    const toOwner = await mailTo(owner, threadId);
    expect(toMember.subject).toBe('Approval needed: Publish this review?');
    expect(toMember.html).toContain('Ship it &lt;script&gt;alert(1)&lt;/script&gt; &amp; more.');
    expect(toMember.html).not.toContain('<script>');
    expect(linkOf(toMember)).not.toBe(linkOf(toOwner));
    await new Promise((r) => setTimeout(r, 300));
    expect(mails.some((m) => JSON.stringify(m.to).includes(viewer.email))).toBe(false);
    const sent = (await detail(runId)).sent_to.find((n) => n.via === 'email');
    expect(sent).toMatchObject({ status: 'delivered' });
    expect(sent!.to).toContain(member.email);

    // A mail scanner's GET: the page, and nothing decided.
    const page = await open(linkOf(toMember));
    expect(page.status).toBe(200);
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    const body = await page.text();
    expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(body).toContain('<form method="post">');
    expect((await detail(runId)).status).toBe('waiting_approval');

    // A reject without its reason decides nothing and leaves the link as it was.
    expect((await confirm(linkOf(toMember), { decision: 'reject' })).status).toBe(400);
    ctx.model.reply(['Published.']);
    const confirmed = await confirm(linkOf(toMember), { decision: 'approve', reason: 'fine by me' });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain('Approved, as Mia Member.');
    await until(async () => (await detail(runId)).status === 'completed' || undefined);
    expect(await decisionsOf(threadId)).toMatchObject([
      { decision: 'approve', decided_by: { id: member.id, name: 'Mia Member' }, reason: 'fine by me', via: 'email' },
    ]);

    // The same link again, the other decider's link, and one character changed: each says so, nothing decided.
    const again = await confirm(linkOf(toMember), { decision: 'approve' });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('This link was used at');
    const other = await open(linkOf(toOwner));
    expect(other.status).toBe(409);
    expect(await other.text()).toMatch(/Nothing to decide here: it was approved by Mia Member at/);
    const path = linkOf(toOwner);
    const changed = `${path.slice(0, -1)}${path.endsWith('A') ? 'B' : 'A'}`;
    const unknown = await confirm(changed, { decision: 'approve' });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('This link is not one this service sent');
    // A script, which asks for no page, gets the error envelope.
    const scripted = await fetch(`${server.url}${linkOf(toOwner)}`);
    expect(scripted.status).toBe(409);
    expect(await scripted.json()).toEqual({
      error: { code: 'conflict', message: expect.stringMatching(/^Nothing to decide here: it was approved by Mia/) },
    });
    expect(await decisionsOf(threadId)).toHaveLength(1);
  });

  it("says a link of an earlier round changed, after another approver's edit, and decides nothing", async () => {
    const ann = await person('Ann Approver', 'member');
    const bob = await person('Bob Approver', 'member');
    const { runId, threadId } = await toGate('mail-pair', 'First draft.');
    const toBob = await mailTo(bob, threadId);
    const stop = (await detail(runId)).stop!;
    const edited = await as(ann, `/stops/${stop.id}/decision`, {
      method: 'POST',
      json: { decision: 'approve', round: 1, edits: { analysis: 'Second draft, by Ann.' } },
    });
    expect(edited.status).toBe(202);
    const page = await confirm(linkOf(toBob), { decision: 'approve' });
    expect(page.status).toBe(409);
    expect(await page.text()).toMatch(
      /changed since it was sent \(it was approved with edits by Ann Approver .*round 2/,
    );
    expect((await decisionsOf(threadId)).map((d) => d.decided_by.name)).toEqual(['Ann Approver']);
    expect((await detail(runId)).status).toBe('waiting_approval');
  });

  it('says an expired stop decides nothing, and checks the role again at the click', async () => {
    const mo = await person('Mo Member', 'member');
    const lapsing = await toGate('mail-lapse');
    const toMo = await mailTo(mo, lapsing.threadId);
    await until(async () => (await detail(lapsing.runId)).status !== 'waiting_approval' || undefined, 20_000);
    const late = await confirm(linkOf(toMo), { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(await late.text()).toMatch(/Nothing to decide here: it expired at/);

    const demoted = await person('Dee Demoted', 'member');
    const { runId, threadId } = await toGate('mail-review');
    const toDee = await mailTo(demoted, threadId);
    // Her click may come before the server has noted the mail as sent (a busy server, or one stopped between the two):
    // the link is hers all the same.
    await server.pool.query(`UPDATE svc_email_links SET sent_at = NULL WHERE recipient = $1`, [demoted.email]);
    await server.pool.query(`UPDATE svc_memberships SET role = 'viewer' WHERE user_id = $1`, [demoted.id]);
    const refused = await confirm(linkOf(toDee), { decision: 'approve' });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('Nothing was decided');
    expect((await detail(runId)).status).toBe('waiting_approval');
    expect(await decisionsOf(threadId)).toEqual([]);
  });
});
