import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_ISSUER } from '../../src-server/auth/authenticator';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';

const SECRET = 'a-session-secret-for-tests-only-0123456789';
const API_TOKEN = 'instance-admin-token-0123456789';
const temp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-paths-')));
// Registered first, so it runs last: after the fixture has stopped the servers.
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }));
const ctx = useIntegrationServer({ server: false });

const dataDir = path.join(temp, 'data');
const roots = path.join(temp, 'projects');
const inRoots = path.join(roots, 'widgets');
const elsewhere = path.join(temp, 'elsewhere');
const cachedClone = path.join(dataDir, 'repositories', '0123456789abcdef');
for (const dir of [inRoots, elsewhere, cachedClone]) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'README.md'), `# ${path.basename(dir)}\n`);
}

/** A member of the default organisation, signed in with a session. */
async function member(server: TestServer): Promise<string> {
  const id = randomUUID();
  await server.pool.query(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'test', $2, 'member')`, [
    id,
    id,
  ]);
  await server.pool.query(
    `INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'org', $2, 'member')`,
    [id, DEFAULT_ORG_ID],
  );
  return new SignJWT({ name: 'member' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(id)
    .setIssuer(SESSION_ISSUER)
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(SECRET));
}

async function run(server: TestServer, token: string, body: Record<string, unknown>) {
  const res = await server.request('/graphs/summary/run', {
    method: 'POST',
    json: { message: 'summarise', ...body },
    headers: { authorization: `Bearer ${token}` },
  });
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    return { status: res.status, events: await readEvents(res) };
  }
  return { status: res.status, error: ((await res.json()) as { error: { message: string } }).error };
}

const DISABLED =
  'local project paths are disabled: set PROJECT_ROOTS to the folders runs may read ' +
  '(without it, only the instance administrator may name a local folder)';

describe('local project paths without PROJECT_ROOTS: the instance administrator only', () => {
  let server: TestServer;
  let token: string;
  beforeAll(async () => {
    server = await ctx.start({
      AUTH_ENABLED: 'true',
      SESSION_SECRET: SECRET,
      SVC_API_TOKEN: API_TOKEN,
      DATA_DIR: dataDir,
    });
    token = await member(server);
  });
  afterAll(() => server?.close());

  it('refuses a project member any local folder, /etc and /proc/self/cwd included, before anything is stored', async () => {
    const before = (await server.pool.query(`SELECT count(*)::int AS n FROM svc_threads`)).rows[0].n;
    for (const projectPath of ['/etc', '/proc/self/cwd', elsewhere, `file://${elsewhere}`]) {
      const answer = await run(server, token, { project_path: projectPath });
      expect(answer, projectPath).toMatchObject({ status: 400, error: { message: DISABLED } });
    }
    const thread = await server.request('/threads', {
      method: 'POST',
      json: { agent: 'summary', project_path: '/etc' },
      headers: { authorization: `Bearer ${token}` },
    });
    expect(thread.status).toBe(400);
    expect((await server.pool.query(`SELECT count(*)::int AS n FROM svc_threads`)).rows[0].n).toBe(before);
  });

  it('lets the administrator (the API token) read a folder, and a member cannot reuse it through the thread', async () => {
    ctx.model.reply(['ok']);
    const own = await run(server, API_TOKEN, { project_path: elsewhere });
    expect(own.events!.at(-1)!.data.type).toBe('run_done');
    expect(JSON.stringify(ctx.model.requests.at(-1))).toContain('# elsewhere');
    const threadId = (own.events![0]!.data as { thread_id: string }).thread_id;
    const reused = await run(server, token, { thread_id: threadId });
    // The member has the thread's project (the default one) but not the administrator's folder.
    expect(reused).toMatchObject({
      status: 400,
      error: { message: `thread ${threadId} works in a folder this run may not use: ${DISABLED}` },
    });
  });

  it("never the server's clone cache, not even for the administrator", async () => {
    for (const projectPath of [cachedClone, path.join(dataDir, 'repositories'), `file://${cachedClone}`]) {
      const answer = await run(server, API_TOKEN, { project_path: projectPath });
      expect(answer, projectPath).toMatchObject({
        status: 400,
        error: {
          message: `project path ${projectPath.replace('file://', '')} is inside the server's clone cache, which is never read`,
        },
      });
    }
  });

  it('refuses credentials in a git URL with a 400 that does not repeat them', async () => {
    const answer = await run(server, API_TOKEN, {
      project_path: 'https://deploy:glpat-s3cret@git.example.com/t/r.git',
    });
    expect(answer.status).toBe(400);
    expect(answer.error!.message).toMatch(/^git URL https:\/\/git\.example\.com\/t\/r\.git carries credentials/);
    expect(JSON.stringify(answer)).not.toContain('s3cret');
    expect(server.logs.join('')).not.toContain('s3cret');
  });
});

describe('local project paths with PROJECT_ROOTS: under them, for everyone', () => {
  it('lets a member read a folder under the roots and nobody, the administrator included, one outside', async () => {
    const server = await ctx.start({
      AUTH_ENABLED: 'true',
      SESSION_SECRET: SECRET,
      SVC_API_TOKEN: API_TOKEN,
      DATA_DIR: dataDir,
      PROJECT_ROOTS: roots,
    });
    try {
      const token = await member(server);
      ctx.model.reply(['ok']);
      const inside = await run(server, token, { project_path: inRoots });
      expect(inside.events!.at(-1)!.data.type).toBe('run_done');
      for (const who of [token, API_TOKEN]) {
        for (const projectPath of [elsewhere, '/etc', path.join(inRoots, '..', '..', 'elsewhere')]) {
          const answer = await run(server, who, { project_path: projectPath });
          expect(answer).toMatchObject({ status: 400 });
          expect(answer.error!.message).toMatch(/is outside the allowed folders \(PROJECT_ROOTS: /);
        }
      }
    } finally {
      await server.close();
    }
  });
});

describe('the desktop and the quick start: authentication off, the anonymous administrator', () => {
  it('may read any folder but the clone cache', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'false', DATA_DIR: dataDir });
    try {
      ctx.model.reply(['ok']);
      const own = await run(server, '', { project_path: elsewhere });
      expect(own.events!.at(-1)!.data.type).toBe('run_done');
      expect((await run(server, '', { project_path: cachedClone })).status).toBe(400);
    } finally {
      await server.close();
    }
  });
});
