import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID, type OrgFolder, type Scope } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents } from '../helpers/sse';

/**
 * Folders belong to tenants: a stored folder is checked with the rights of whoever uses it (a fork, a run in the
 * thread, the LangGraph API), and under PROJECT_ROOTS each organisation works in the folders registered to it.
 */

const SECRET = 'a-session-secret-for-tests-only-0123456789';
const API_TOKEN = 'instance-admin-token-0123456789';
const temp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-org-folders-')));
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }));
const ctx = useIntegrationServer({ server: false });

const roots = path.join(temp, 'roots');
const folderOf = (name: string) => path.join(roots, name);
for (const name of ['acme', 'acme/deep', 'globex', 'shared', 'later']) {
  fs.mkdirSync(folderOf(name), { recursive: true });
  fs.writeFileSync(path.join(folderOf(name), 'README.md'), `# ${name} secrets\n`);
}
const adminOnly = path.join(temp, 'admin-only');
fs.mkdirSync(adminOnly);
fs.writeFileSync(path.join(adminOnly, 'README.md'), '# the administrator’s notes\n');

type Answer = { status: number; body: Record<string, unknown> & { error?: { message: string } } };

async function call(server: TestServer, token: string, method: string, url: string, json?: unknown): Promise<Answer> {
  const res = await server.request(url, {
    method,
    ...(json === undefined ? {} : { json }),
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

/** Starts a run and reads its stream to its end or gate: the thread's id, or the refusal. */
async function run(server: TestServer, token: string, agent: string, body: Record<string, unknown>) {
  const res = await server.request(`/graphs/${agent}/run`, {
    method: 'POST',
    json: { message: 'look around', ...body },
    headers: { authorization: `Bearer ${token}` },
  });
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    return { status: res.status, error: ((await res.json()) as { error: { message: string } }).error };
  }
  const events = await readEvents(res);
  const start = events[0]!.data as { thread_id: string; run_id: string };
  return { status: res.status, threadId: start.thread_id, runId: start.run_id, last: events.at(-1)!.data.type };
}

describe('a stored folder is checked with the rights of whoever uses it', () => {
  let server: TestServer;
  let member: string;
  let threadId: string;
  let checkpointId: string;
  const refusal = (id: string) =>
    `thread ${id} works in a folder this run may not use: local project paths are disabled: set PROJECT_ROOTS to ` +
    'the folders runs may read (without it, only the instance administrator may name a local folder)';

  beforeAll(async () => {
    server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN });
    member = await signSession(
      await addUser(server.pool, 'mallory', [['project', DEFAULT_PROJECT_ID, 'member']]),
      SECRET,
    );
    // The administrator's run over a folder of her own, waiting at its gate.
    ctx.model.reply(['notes read']);
    const own = await run(server, API_TOKEN, 'review', { project_path: adminOnly });
    expect(own.last).toBe('gate_waiting');
    threadId = own.threadId!;
    const checkpoints = (await call(server, member, 'GET', `/threads/${threadId}/checkpoints`))
      .body as unknown as Checkpoint[];
    checkpointId = checkpoints.find((c) => c.next.includes('analysis'))!.checkpoint_id;
  });
  afterAll(() => server?.close());

  it("refuses a member's fork of the administrator's run, through both fork routes, storing nothing", async () => {
    const before = (await server.pool.query('SELECT count(*)::int AS n FROM svc_runs')).rows[0].n;
    ctx.model.requests.length = 0;
    for (const route of ['run', 'runs']) {
      const fork = await call(server, member, 'POST', `/threads/${threadId}/checkpoints/${checkpointId}/${route}`, {});
      expect(fork, route).toMatchObject({ status: 400, body: { error: { message: refusal(threadId) } } });
    }
    expect((await server.pool.query('SELECT count(*)::int AS n FROM svc_runs')).rows[0].n).toBe(before);
    expect(JSON.stringify(ctx.model.requests)).not.toContain('administrator’s notes');
  });

  it("refuses the same fork through the LangGraph API's checkpoint, and a new run in the thread", async () => {
    await call(server, API_TOKEN, 'POST', `/runs/${(await latestRun(server, threadId)).id}/cancel`, {});
    const lg = await server.request(`/lg/threads/${threadId}/runs/wait`, {
      method: 'POST',
      json: { assistant_id: 'review', checkpoint_id: checkpointId, input: { message: 'again' } },
      headers: { authorization: `Bearer ${member}` },
    });
    expect(lg.status).toBe(400);
    expect(await lg.text()).toContain(refusal(threadId));
    const again = await run(server, member, 'review', { thread_id: threadId });
    expect(again).toMatchObject({ status: 400, error: { message: refusal(threadId) } });
  });
});

async function latestRun(server: TestServer, threadId: string): Promise<{ id: string }> {
  const { rows } = await server.pool.query('SELECT id FROM svc_runs WHERE thread_id = $1 ORDER BY started_at DESC', [
    threadId,
  ]);
  return rows[0];
}

describe('under PROJECT_ROOTS, each organisation works in its own folders', () => {
  let server: TestServer;
  const ids = { acme: '', acmeProject: '', globex: '', globexProject: '' };
  const tokens = { acmeAdmin: '', acmeMember: '', globexAdmin: '', globexMember: '', defaultMember: '' };
  const folders: Record<string, OrgFolder> = {};

  /** An organisation with one team and one project, made by the instance administrator. */
  async function organisation(name: string): Promise<{ org: string; project: string }> {
    const org = (await call(server, API_TOKEN, 'POST', '/orgs', { name })).body as unknown as Scope;
    const team = (await call(server, API_TOKEN, 'POST', '/teams', { name, parent_id: org.id }))
      .body as unknown as Scope;
    const project = (await call(server, API_TOKEN, 'POST', '/projects', { name, parent_id: team.id }))
      .body as unknown as Scope;
    return { org: org.id, project: project.id };
  }

  beforeAll(async () => {
    server = await ctx.start({
      AUTH_ENABLED: 'true',
      SESSION_SECRET: SECRET,
      SVC_API_TOKEN: API_TOKEN,
      PROJECT_ROOTS: roots,
      SCHEDULES_ALLOW_SECONDS: 'true',
    });
    const acme = await organisation('Acme');
    const globex = await organisation('Globex');
    Object.assign(ids, {
      acme: acme.org,
      acmeProject: acme.project,
      globex: globex.org,
      globexProject: globex.project,
    });
    const user = async (name: string, roles: Parameters<typeof addUser>[2]) =>
      signSession(await addUser(server.pool, name, roles), SECRET, '1h', name);
    tokens.acmeAdmin = await user('acme-admin', [['org', acme.org, 'admin']]);
    tokens.acmeMember = await user('acme-member', [['project', acme.project, 'member']]);
    tokens.globexAdmin = await user('globex-admin', [['org', globex.org, 'admin']]);
    tokens.globexMember = await user('globex-member', [['project', globex.project, 'member']]);
    tokens.defaultMember = await user('default-member', [['project', DEFAULT_PROJECT_ID, 'member']]);
  });
  afterAll(() => server?.close());

  it('registers folders to an organisation: its admins or the instance administrator, without overlap', async () => {
    const register = (token: string, org: string, folder: string) =>
      call(server, token, 'POST', `/orgs/${org}/folders`, { path: folder });
    const acme = await register(tokens.acmeAdmin, ids.acme, folderOf('acme'));
    expect(acme).toMatchObject({
      status: 201,
      body: { org_id: ids.acme, path: folderOf('acme'), created_by: 'acme-admin' },
    });
    folders.acme = acme.body as unknown as OrgFolder;
    const globex = await register(API_TOKEN, ids.globex, folderOf('globex'));
    expect(globex.status).toBe(201);
    folders.globex = globex.body as unknown as OrgFolder;
    folders.later = (await register(tokens.globexAdmin, ids.globex, folderOf('later'))).body as unknown as OrgFolder;

    // Another organisation's folder, one inside it, or one around it: refused, whoever asks.
    for (const folder of [folderOf('acme'), folderOf('acme/deep'), roots, `${folderOf('acme')}/../acme`]) {
      const taken = await register(tokens.globexAdmin, ids.globex, folder);
      expect(taken.status, folder).toBe(409);
      expect(taken.body.error!.message).toMatch(/(is in|holds) a folder of another organisation$/);
    }
    expect((await register(tokens.acmeAdmin, ids.acme, folderOf('acme/deep'))).body.error!.message).toBe(
      `folder ${folderOf('acme/deep')} overlaps ${folderOf('acme')}, already a folder of this organisation`,
    );
    expect((await register(tokens.acmeAdmin, ids.acme, temp)).status).toBe(400);
    expect((await register(tokens.acmeAdmin, ids.acme, '/etc')).body.error!.message).toMatch(
      /is outside the allowed folders \(PROJECT_ROOTS: /,
    );
    expect((await register(tokens.acmeAdmin, ids.acme, path.join(roots, 'missing'))).status).toBe(400);
    // Members inside the organisation do not register; another organisation's list is not there at all.
    expect((await register(tokens.acmeMember, ids.acme, folderOf('shared'))).status).toBe(403);
    expect((await register(tokens.acmeAdmin, ids.globex, folderOf('shared'))).status).toBe(404);
    expect((await call(server, tokens.acmeAdmin, 'GET', `/orgs/${ids.globex}/folders`)).status).toBe(404);
    const listed = await call(server, tokens.acmeMember, 'GET', `/orgs/${ids.acme}/folders`);
    expect(listed).toMatchObject({ status: 200, body: [{ path: folderOf('acme') }] });
  });

  it("refuses a member another organisation's folder and anything outside her own, for runs, threads and schedules", async () => {
    ctx.model.reply(['read']);
    const own = await run(server, tokens.globexMember, 'summary', {
      project_id: ids.globexProject,
      project_path: folderOf('globex'),
    });
    expect(own.last).toBe('run_done');
    const outside = `is outside the folders of this project's organisation (${folderOf('globex')}, ${folderOf('later')})`;
    const cases: [string, RegExp][] = [
      [folderOf('acme'), /is in a folder of another organisation$/],
      [path.join(folderOf('globex'), '..', 'acme', 'deep'), /is in a folder of another organisation$/],
      [roots, /holds a folder of another organisation$/],
      [folderOf('shared'), new RegExp(`${outside.replace(/[()]/g, '\\$&')}$`)],
    ];
    ctx.model.requests.length = 0;
    for (const [folder, reason] of cases) {
      const answer = await run(server, tokens.globexMember, 'summary', {
        project_id: ids.globexProject,
        project_path: folder,
      });
      expect(answer.status, folder).toBe(400);
      expect(answer.error!.message, folder).toMatch(reason);
      const thread = await call(server, tokens.globexMember, 'POST', '/threads', {
        agent: 'summary',
        project_id: ids.globexProject,
        project_path: folder,
      });
      expect(thread.status, folder).toBe(400);
      const schedule = await call(server, tokens.globexMember, 'POST', `/projects/${ids.globexProject}/schedules`, {
        agent: 'summary',
        cron: '0 9 * * 1',
        timezone: 'UTC',
        message: 'weekly',
        project_path: folder,
      });
      expect(schedule.status, folder).toBe(400);
      expect(schedule.body.error!.message).toMatch(reason);
    }
    expect(JSON.stringify(ctx.model.requests)).not.toContain('acme secrets');
    // The LangGraph API names the folder in the run's configuration: the same rule.
    const draft = await call(server, tokens.globexMember, 'POST', '/lg/threads', {});
    const lg = await server.request(`/lg/threads/${draft.body.thread_id}/runs/wait`, {
      method: 'POST',
      json: {
        assistant_id: 'summary',
        input: { message: 'read it' },
        config: { configurable: { project_path: folderOf('acme') } },
      },
      headers: { authorization: `Bearer ${tokens.globexMember}` },
    });
    expect(lg.status).toBe(400);
    expect(await lg.text()).toContain('is in a folder of another organisation');
  });

  it("lets the default organisation use the roots as before, except other organisations' folders", async () => {
    ctx.model.reply(['read']);
    const shared = await run(server, tokens.defaultMember, 'summary', { project_path: folderOf('shared') });
    expect(shared.last).toBe('run_done');
    for (const [folder, reason] of [
      [folderOf('acme'), /is in a folder of another organisation$/],
      [roots, /holds a folder of another organisation$/],
    ] as const) {
      const answer = await run(server, tokens.defaultMember, 'summary', { project_path: folder });
      expect(answer.status, folder).toBe(400);
      expect(answer.error!.message).toMatch(reason);
    }
  });

  it('refuses a thread, a fork and a schedule whose folder is no longer the organisation’s, saying why', async () => {
    ctx.model.reply(['read']);
    const first = await run(server, tokens.globexMember, 'review', {
      project_id: ids.globexProject,
      project_path: folderOf('later'),
    });
    expect(first.last).toBe('gate_waiting');
    const checkpoints = (await call(server, tokens.globexMember, 'GET', `/threads/${first.threadId}/checkpoints`))
      .body as unknown as Checkpoint[];
    const intake = checkpoints.find((c) => c.next.includes('analysis'))!.checkpoint_id;
    await call(server, tokens.globexMember, 'POST', `/runs/${first.runId}/cancel`, {});
    const schedule = await call(server, tokens.globexMember, 'POST', `/projects/${ids.globexProject}/schedules`, {
      agent: 'summary',
      cron: '0 9 * * 1',
      timezone: 'UTC',
      message: 'weekly',
      project_path: folderOf('later'),
    });
    expect(schedule.status).toBe(201);

    const removed = await call(
      server,
      tokens.globexAdmin,
      'DELETE',
      `/orgs/${ids.globex}/folders/${folders.later!.id}`,
    );
    expect(removed.status).toBe(204);
    const reason = `is outside the folders of this project's organisation (${folderOf('globex')})`;
    const again = await run(server, tokens.globexMember, 'review', { thread_id: first.threadId });
    expect(again.status).toBe(400);
    expect(again.error!.message).toBe(
      `thread ${first.threadId} works in a folder this run may not use: project path ${folderOf('later')} ${reason}`,
    );
    const fork = await call(
      server,
      tokens.globexMember,
      'POST',
      `/threads/${first.threadId}/checkpoints/${intake}/runs`,
      {},
    );
    expect(fork.status).toBe(400);
    expect(fork.body.error!.message).toContain(`thread ${first.threadId} works in a folder this run may not use`);
    // A schedule is checked at each fire, as the person it runs as.
    const fire = await call(server, tokens.globexMember, 'POST', `/schedules/${schedule.body.id}/run`);
    expect(fire.status).toBe(201);
    expect(fire.body).toMatchObject({ outcome: 'paused' });
    expect(String(fire.body.reason)).toContain(reason);
  });
});
