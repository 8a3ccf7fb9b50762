import { randomUUID } from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID, DEFAULT_TEAM_ID } from '../../src-server/contracts/tenancy';
import { SESSION_ISSUER } from '../../src-server/auth/authenticator';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';

const SECRET = 'a-session-secret-for-tests-only-0123456789';
const API_TOKEN = 'instance-admin-token-0123456789';
type Who = 'admin' | 'owner' | 'member' | 'viewer' | 'outsider' | 'none';
const ROLES: Who[] = ['admin', 'owner', 'member', 'viewer', 'outsider', 'none'];

const ctx = useIntegrationServer({ server: false });

const sign = (sub: string, secret = SECRET, expiresIn: string | number = '1h') =>
  new SignJWT({ name: sub.slice(0, 8) })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuer(SESSION_ISSUER)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(secret));

async function user(server: TestServer, role: Exclude<Who, 'outsider' | 'none'> | null): Promise<string> {
  const id = randomUUID();
  await server.pool.query(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'test', $2, $3)`, [
    id,
    id,
    role ?? 'outsider',
  ]);
  if (role)
    await server.pool.query(
      `INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'org', $2, $3)`,
      [id, DEFAULT_ORG_ID, role],
    );
  return id;
}

/** Everything a test row needs: ids of things to act on, created fresh by the instance admin. */
async function fixtures(server: TestServer) {
  ctx.model.reply(['fine']);
  const gateEvents = await readEvents(
    await server.request('/graphs/review/run', { method: 'POST', json: { message: 'to the gate' } }),
  );
  const gated = gateEvents[0]!.data as { run_id: string; thread_id: string };
  const done = await readEvents(
    await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'finished' } }),
  );
  const finished = done[0]!.data as { run_id: string; thread_id: string };
  return { gated, finished };
}

interface Row {
  name: string;
  method: string;
  path: (f: Awaited<ReturnType<typeof fixtures>>, self: string) => string;
  body?: unknown;
  /** Expected status per caller. */
  expect: Record<Who, number>;
}

const all = (status: number): Record<Who, number> => ({
  admin: status,
  owner: status,
  member: status,
  viewer: status,
  outsider: status,
  none: 401,
});
const from = (min: 'admin' | 'owner' | 'member' | 'viewer', ok: number): Record<Who, number> => {
  const rank = ['viewer', 'member', 'owner', 'admin'];
  const at = (who: 'admin' | 'owner' | 'member' | 'viewer') => (rank.indexOf(who) >= rank.indexOf(min) ? ok : 403);
  return {
    admin: at('admin'),
    owner: at('owner'),
    member: at('member'),
    viewer: at('viewer'),
    outsider: 404,
    none: 401,
  };
};

// The matrix's rows, one a line: the method, what the row is called, its path, the body POST and PUT send,
// and the status each caller gets.
const noBody =
  (method: string) =>
  (name: string, path: Row['path'], expect: Row['expect']): Row => ({ name, method, path, expect });
const withBody =
  (method: string) =>
  (name: string, path: Row['path'], body: unknown, expect: Row['expect']): Row => ({
    name,
    method,
    path,
    body,
    expect,
  });
const get = noBody('GET');
const del = noBody('DELETE');
const post = withBody('POST');
const put = withBody('PUT');

/** The whole matrix (endpoint × role); README's "Access control" table says the same in words. */
const MATRIX: Row[] = [
  get('health is public', () => '/health', { ...all(200), none: 200 }),
  get('list agents', () => '/agents', all(200)),
  get('list commands', () => '/commands', all(200)),
  get('models', () => '/models', all(200)),
  get('queue status', () => '/queue/status', all(200)),
  post('queue reset', () => '/queue/reset', { reason: 'matrix' }, from('owner', 200)),
  get('who am I', () => '/auth/me', all(200)),
  get('list threads', () => '/threads', all(200)),
  post('create a thread', () => '/threads', { agent: 'summary' }, from('member', 201)),
  get('read a thread', (f) => `/threads/${f.finished.thread_id}`, from('viewer', 200)),
  get('run history', (f) => `/threads/${f.finished.thread_id}/runs`, from('viewer', 200)),
  get('run detail', (f) => `/runs/${f.finished.run_id}`, from('viewer', 200)),
  get('follow a run', (f) => `/runs/${f.finished.run_id}/stream`, from('viewer', 200)),
  get('graph definition', () => '/agents/review/graph-definition', from('viewer', 200)),
  get('read node config', () => '/agents/review/nodes/analysis/config', from('viewer', 200)),
  put('save node config', () => '/agents/review/nodes/analysis/config', { notes: 'matrix' }, from('owner', 200)),
  post('run an agent', () => '/graphs/summary/run', { message: 'matrix run' }, from('member', 200)),
  post('approve a gate', (f) => `/threads/${f.gated.thread_id}/gates/gate/approve`, {}, from('member', 202)),
  post('cancel a run', (f) => `/runs/${f.gated.run_id}/cancel`, {}, from('member', 200)),
  del('delete a thread', (f) => `/threads/${f.finished.thread_id}`, from('member', 204)),
  get('list organisations', () => '/orgs', all(200)),
  post(
    'create an organisation',
    () => '/orgs',
    { name: 'New org' },
    { admin: 403, owner: 403, member: 403, viewer: 403, outsider: 403, none: 401 },
  ),
  post('create a team', () => '/teams', { name: 'New team', parent_id: DEFAULT_ORG_ID }, from('admin', 201)),
  post('create a project', () => '/projects', { name: 'New project', parent_id: DEFAULT_TEAM_ID }, from('admin', 201)),
  get('list org members', () => `/orgs/${DEFAULT_ORG_ID}/members`, from('viewer', 200)),
  put(
    'set a project member',
    (_f, self) => `/projects/${DEFAULT_PROJECT_ID}/members/${self}`,
    { role: 'viewer' },
    from('owner', 200),
  ),
  del('delete the default project', () => `/projects/${DEFAULT_PROJECT_ID}`, from('admin', 409)),
];

describe('the role matrix with AUTH_ENABLED=true', () => {
  let server: TestServer;
  const tokens = {} as Record<Who, string | null>;
  const ids = {} as Record<Who, string>;

  beforeAll(async () => {
    server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN });
    for (const who of ROLES) {
      if (who === 'none') {
        tokens.none = null;
        continue;
      }
      ids[who] = await user(server, who === 'outsider' ? null : who);
      tokens[who] = await sign(ids[who]);
    }
  });
  afterAll(() => server?.close());

  it.each(MATRIX)('$name: $method', async (row) => {
    const seen: Record<string, number> = {};
    for (const who of ROLES) {
      const f = await fixtures(server);
      const res = await fetch(`${server.url}${row.path(f, ids[who] ?? randomUUID())}`, {
        method: row.method,
        headers: {
          ...(tokens[who] ? { authorization: `Bearer ${tokens[who]}` } : {}),
          ...(row.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: row.body !== undefined ? JSON.stringify(row.body) : undefined,
      });
      seen[who] = res.status;
      if (res.headers.get('content-type')?.includes('event-stream')) await res.body?.cancel();
      else await res.text();
    }
    expect(seen).toEqual(row.expect);
  });
});

describe('the same matrix with AUTH_ENABLED=false: everyone is the anonymous admin', () => {
  it.each(MATRIX.filter((row) => row.name !== 'create an organisation'))('$name: $method', async (row) => {
    const server = await ctx.start({ AUTH_ENABLED: 'false' });
    try {
      const f = await fixtures(server);
      const res = await server.request(row.path(f, randomUUID()), {
        method: row.method,
        ...(row.body !== undefined ? { json: row.body } : {}),
      });
      if (res.headers.get('content-type')?.includes('event-stream')) await res.body?.cancel();
      const expected = row.name === 'set a project member' ? 404 : row.expect.admin;
      expect(res.status).toBe(expected);
    } finally {
      await server.close();
    }
  });
});

describe('tokens', () => {
  let server: TestServer;
  let userId: string;
  beforeAll(async () => {
    server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET });
    userId = await user(server, 'member');
  });
  afterAll(() => server?.close());

  const status = async (token: string) =>
    (await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('accepts a valid session and rejects expired, wrongly signed, unsigned, tampered and other-algorithm tokens', async () => {
    expect(await status(await sign(userId))).toBe(200);
    expect(await status(await sign(userId, SECRET, Math.floor(Date.now() / 1000) - 10))).toBe(401);
    expect(await status(await sign(userId, 'another-secret-of-enough-length-000'))).toBe(401);
    expect(await status(new UnsecuredJWT({ sub: userId, iss: SESSION_ISSUER }).setExpirationTime('1h').encode())).toBe(
      401,
    );
    const [header, , signature] = (await sign(userId)).split('.');
    const forged = Buffer.from(
      JSON.stringify({ sub: randomUUID(), iss: SESSION_ISSUER, exp: Math.floor(Date.now() / 1000) + 3600 }),
    ).toString('base64url');
    expect(await status(`${header}.${forged}.${signature}`)).toBe(401);
    const hs512 = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS512' })
      .setSubject(userId)
      .setIssuer(SESSION_ISSUER)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(SECRET));
    expect(await status(hs512)).toBe(401);
    const wrongIssuer = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(userId)
      .setIssuer('someone-else')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(SECRET));
    expect(await status(wrongIssuer)).toBe(401);
    const res = await fetch(`${server.url}/auth/me`, { headers: { authorization: 'Bearer nonsense' } });
    expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'invalid or expired token' } });
  });

  it('rejects a session without an expiry: it would be valid forever', async () => {
    const forever = await new SignJWT({ name: 'forever' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(userId)
      .setIssuer(SESSION_ISSUER)
      .setIssuedAt()
      .sign(new TextEncoder().encode(SECRET));
    expect(await status(forever)).toBe(401);
  });

  it('rejects the session of a user who was deleted', async () => {
    const gone = await user(server, 'member');
    const token = await sign(gone);
    expect(await status(token)).toBe(200);
    await server.pool.query(`DELETE FROM svc_users WHERE id = $1`, [gone]);
    expect(await status(token)).toBe(401);
    const runs = await fetch(`${server.url}/threads`, { headers: { authorization: `Bearer ${token}` } });
    expect(runs.status).toBe(401);
  });

  it('answers a subject that is not a user id with 401, never a 500', async () => {
    for (const subject of ['not-a-uuid', "0' OR '1'='1", '']) {
      const token = await sign(subject);
      for (const path of ['/auth/me', '/threads', '/orgs']) {
        const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status, `${JSON.stringify(subject)} ${path}`).toBe(401);
        expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'invalid or expired token' } });
      }
    }
  });
});

describe('granting roles', () => {
  it('nobody grants a role above their own: a project owner cannot make anyone admin', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET });
    try {
      const owner = await user(server, null);
      await server.pool.query(
        `INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'project', $2, 'owner')`,
        [owner, DEFAULT_PROJECT_ID],
      );
      const friend = await user(server, null);
      const token = await sign(owner);
      const grant = (role: string) =>
        fetch(`${server.url}/projects/${DEFAULT_PROJECT_ID}/members/${friend}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ role }),
        });
      const refused = await grant('admin');
      expect(refused.status).toBe(403);
      expect(await refused.json()).toEqual({
        error: { code: 'forbidden', message: 'your role here is owner; you cannot grant admin, which is above it' },
      });
      const { rows } = await server.pool.query(`SELECT role FROM svc_memberships WHERE user_id = $1`, [friend]);
      expect(rows).toEqual([]);
      for (const role of ['owner', 'member', 'viewer']) expect((await grant(role)).status, role).toBe(200);
      // Nor can she raise herself.
      const self = await fetch(`${server.url}/projects/${DEFAULT_PROJECT_ID}/members/${owner}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'admin' }),
      });
      expect(self.status).toBe(403);
    } finally {
      await server.close();
    }
  });
});

describe('tenant isolation', () => {
  it('a user of one organisation can neither list nor fetch nor approve in another', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN });
    try {
      const org = await (await server.request('/orgs', { method: 'POST', json: { name: 'Other org' } })).json();
      const team = await (
        await server.request('/teams', { method: 'POST', json: { name: 'Other team', parent_id: org.id } })
      ).json();
      const project = await (
        await server.request('/projects', { method: 'POST', json: { name: 'Other project', parent_id: team.id } })
      ).json();
      const stranger = randomUUID();
      await server.pool.query(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'test', $2, 'stranger')`, [
        stranger,
        stranger,
      ]);
      expect(
        (await server.request(`/orgs/${org.id}/members/${stranger}`, { method: 'PUT', json: { role: 'admin' } }))
          .status,
      ).toBe(200);
      const token = await sign(stranger);
      const as = (path: string, init: RequestInit = {}) =>
        fetch(`${server.url}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        });

      const { gated } = await fixtures(server);
      const threads = await (await as('/threads')).json();
      expect(threads.items.map((t: { id: string }) => t.id)).not.toContain(gated.thread_id);
      expect((await as(`/threads/${gated.thread_id}`)).status).toBe(404);
      expect((await as(`/runs/${gated.run_id}`)).status).toBe(404);
      const approve = await as(`/threads/${gated.thread_id}/gates/gate/approve`, { method: 'POST', body: '{}' });
      expect(approve.status).toBe(404);
      expect(await approve.json()).toEqual({
        error: { code: 'not_found', message: `thread ${gated.thread_id} not found` },
      });
      expect((await as(`/runs/${gated.run_id}/cancel`, { method: 'POST', body: '{}' })).status).toBe(404);
      const orgs = await (await as('/orgs')).json();
      expect(orgs.map((o: { id: string; role: string }) => [o.id, o.role])).toEqual([[org.id, 'admin']]);
      expect(await (await as(`/teams?org_id=${DEFAULT_ORG_ID}`)).json()).toEqual([]);
      expect((await as(`/projects`)).status).toBe(200);
      expect((await (await as('/projects')).json()).map((p: { id: string }) => p.id)).toEqual([project.id]);
      expect((await as(`/orgs/${DEFAULT_ORG_ID}/members`)).status).toBe(404);
      expect((await server.request(`/runs/${gated.run_id}`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('transport guards', () => {
  it('refuses requests addressed to a non-loopback name while listening on loopback (DNS rebinding)', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'false' });
    try {
      const http = await import('node:http');
      const statusFor = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(`${server.url}/health`, { headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      const status = await statusFor('attacker.example:8000');
      expect(status).toBe(403);
      expect(await statusFor('127.0.0.1.evil.example')).toBe(403);
      expect(await statusFor(`127.0.0.1.evil.example:${server.port}`)).toBe(403);
      expect(await statusFor(`[::1]:${server.port}`)).toBe(200);
      expect((await fetch(`${server.url.replace('127.0.0.1', 'localhost')}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('sends no CORS headers unless CORS_ORIGINS lists the origin', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'false', CORS_ORIGINS: 'http://app.example' });
    try {
      const allowed = await fetch(`${server.url}/agents`, { headers: { origin: 'http://app.example' } });
      expect(allowed.headers.get('access-control-allow-origin')).toBe('http://app.example');
      const preflight = await fetch(`${server.url}/graphs/summary/run`, {
        method: 'OPTIONS',
        headers: {
          origin: 'http://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-headers')).toContain('Authorization');
      const other = await fetch(`${server.url}/agents`, { headers: { origin: 'http://evil.example' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      // The answer depends on Origin whichever it is, so a shared cache must key on it every time.
      expect(allowed.headers.get('vary')).toMatch(/\bOrigin\b/);
      expect(other.headers.get('vary')).toMatch(/\bOrigin\b/);
      expect((await fetch(`${server.url}/agents`)).headers.get('vary')).toMatch(/\bOrigin\b/);
    } finally {
      await server.close();
    }
  });
});
