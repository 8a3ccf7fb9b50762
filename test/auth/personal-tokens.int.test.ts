import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN_ADMIN } from '../../src-server/auth/principal';
import { PERSONAL_TOKENS_MAX } from '../../src-server/contracts/auth';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import { requestServer, type TestRequestInit } from '../helpers/request';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { connectMcp } from '../mcp/mcp-client';

/**
 * Personal access tokens over real HTTP and PostgreSQL: a person makes one with her session (or the API token's
 * administrator with that token), and a script or an MCP client then acts with it as she does, until she revokes it.
 */
const API_TOKEN = 'personal-tokens-test-api-token';
const SECRET = 'personal-tokens-test-session-secret-0123456789';
const ctx = useIntegrationServer({
  model: false,
  server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN, SESSION_SECRET: SECRET },
});

const REFUSED = { error: { code: 'unauthorized', message: 'invalid or expired token' } };

interface Created {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  token: string;
}

/** A request with `token` as its bearer (null: none at all). */
const as = (token: string | null, path: string, init: TestRequestInit = {}) =>
  requestServer(
    ctx.server.url,
    path,
    token === null ? init : { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } },
  );

/** A signed-in user with the member role on the default project, and her session token. */
async function member(name: string): Promise<{ id: string; session: string }> {
  const id = await addUser(ctx.server.pool, name, [['project', DEFAULT_PROJECT_ID, 'member']]);
  return { id, session: await signSession(id, SECRET, '1h', name) };
}

async function create(bearer: string, name = 'my script'): Promise<Created> {
  const res = await as(bearer, '/me/tokens', { method: 'POST', json: { name } });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Created;
}

const list = async (bearer: string) => (await (await as(bearer, '/me/tokens')).json()) as Omit<Created, 'token'>[];

describe('a personal access token', () => {
  let ada: { id: string; session: string };
  beforeAll(async () => {
    ada = await member('Ada');
  });

  it('is shown once, not cached, and acts with its owner’s roles: what a member may do, and no more', async () => {
    const res = await as(ada.session, '/me/tokens', { method: 'POST', json: { name: '  Claude Desktop  ' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const created = (await res.json()) as Created;
    expect(created).toEqual({
      id: expect.any(String),
      name: 'Claude Desktop',
      prefix: created.token.slice(0, 13),
      created_at: expect.any(String),
      last_used_at: null,
      token: expect.stringMatching(/^svcpat_[A-Za-z0-9_-]{43}$/),
    });
    const { rows } = await ctx.server.pool.query(`SELECT * FROM svc_personal_tokens WHERE id = $1`, [created.id]);
    expect(JSON.stringify(rows)).not.toContain(created.token.slice(13));

    const me = await (await as(created.token, '/auth/me')).json();
    expect(me).toMatchObject({
      user: { id: ada.id, name: 'Ada', kind: 'session' },
      instance_admin: false,
      memberships: [{ scope_type: 'project', scope_id: DEFAULT_PROJECT_ID, role: 'member' }],
    });
    // The same answers as her session: she may start a thread in her project, not manage its members nor make an
    // organisation.
    const calls: [string, TestRequestInit][] = [
      ['/threads', { method: 'POST', json: { agent: 'summary', project_id: DEFAULT_PROJECT_ID } }],
      ['/threads', {}],
      [`/projects/${DEFAULT_PROJECT_ID}/members/${ada.id}`, { method: 'PUT', json: { role: 'owner' } }],
      ['/orgs', { method: 'POST', json: { name: 'Mine' } }],
    ];
    const statuses = async (bearer: string) =>
      Promise.all(calls.map(async ([path, init]) => (await as(bearer, path, init)).status));
    expect(await statuses(created.token)).toEqual([201, 200, 403, 403]);
    expect(await statuses(ada.session)).toEqual([201, 200, 403, 403]);
    expect(ctx.server.logs.join('\n')).not.toContain(created.token.slice('svcpat_'.length));
  });

  it('is listed without its secret, newest first, with when it was last used (written at most once a minute)', async () => {
    const older = await create(ada.session, 'older');
    const newer = await create(ada.session, 'newer');
    const before = await list(ada.session);
    expect(before.slice(0, 2)).toEqual([
      { id: newer.id, name: 'newer', prefix: newer.prefix, created_at: newer.created_at, last_used_at: null },
      { id: older.id, name: 'older', prefix: older.prefix, created_at: older.created_at, last_used_at: null },
    ]);
    expect(JSON.stringify(before)).not.toContain(newer.token);

    expect((await as(newer.token, '/auth/me')).status).toBe(200);
    const used = (await list(ada.session)).find((t) => t.id === newer.id)!.last_used_at;
    expect(used).not.toBeNull();
    // Used again within the minute: not written again.
    expect((await as(newer.token, '/threads')).status).toBe(200);
    expect((await list(ada.session)).find((t) => t.id === newer.id)!.last_used_at).toBe(used);
    // A minute later it is.
    await ctx.server.pool.query(
      `UPDATE svc_personal_tokens SET last_used_at = last_used_at - interval '61 seconds' WHERE id = $1`,
      [newer.id],
    );
    expect((await as(newer.token, '/threads')).status).toBe(200);
    const again = (await list(ada.session)).find((t) => t.id === newer.id)!.last_used_at!;
    expect(Date.parse(again)).toBeGreaterThan(Date.parse(used!));
  });

  it('answers 401 once revoked, as an unknown or malformed one does, and leaves the list', async () => {
    const { id, token } = await create(ada.session);
    expect((await as(token, '/auth/me')).status).toBe(200);
    const revoked = await as(ada.session, `/me/tokens/${id}/revoke`, { method: 'POST' });
    expect(revoked.status).toBe(204);
    for (const refused of [token, `svcpat_${randomBytes(32).toString('base64url')}`, 'svcpat_short']) {
      const res = await as(refused, '/auth/me');
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual(REFUSED);
    }
    expect((await list(ada.session)).map((t) => t.id)).not.toContain(id);
    // Revoking it again changes nothing.
    expect((await as(ada.session, `/me/tokens/${id}/revoke`, { method: 'POST' })).status).toBe(204);
  });

  it('is its owner’s alone: another person neither lists nor revokes it, and learns nothing of it', async () => {
    const { id, token } = await create(ada.session);
    const bob = await member('Bob');
    expect(await list(bob.session)).toEqual([]);
    const theirs = await as(bob.session, `/me/tokens/${id}/revoke`, { method: 'POST' });
    const unknownId = randomUUID();
    const unknown = await as(bob.session, `/me/tokens/${unknownId}/revoke`, { method: 'POST' });
    expect([theirs.status, unknown.status]).toEqual([404, 404]);
    expect(await theirs.json()).toEqual({
      error: { code: 'not_found', message: `personal access token ${id} not found` },
    });
    expect(await unknown.json()).toEqual({
      error: { code: 'not_found', message: `personal access token ${unknownId} not found` },
    });
    expect((await as(token, '/auth/me')).status).toBe(200);
  });

  it('cannot make another token: revoking a leaked one ends everything it could do', async () => {
    const { token } = await create(ada.session);
    const res = await as(token, '/me/tokens', { method: 'POST', json: { name: 'child' } });
    expect(res.status).toBe(403);
    expect((await res.json()).error.message).toBe(
      'a personal access token cannot create another: sign in to the studio to make one',
    );
    // It may list and revoke its owner's tokens, itself included.
    const own = (await (await as(token, '/me/tokens')).json()) as { id: string; prefix: string }[];
    const self = own.find((t) => token.startsWith(t.prefix))!;
    expect((await as(token, `/me/tokens/${self.id}/revoke`, { method: 'POST' })).status).toBe(204);
    expect((await as(token, '/auth/me')).status).toBe(401);
  });

  it('is taken by the MCP server at /mcp, until it is revoked', async () => {
    const { id, token } = await create(ada.session, 'MCP client');
    const mcp = await connectMcp(ctx.server.url, token);
    try {
      expect((await mcp.client.listTools()).tools.map((t) => t.name)).toContain('list_agents');
    } finally {
      await mcp.close();
    }
    await as(ada.session, `/me/tokens/${id}/revoke`, { method: 'POST' });
    await expect(connectMcp(ctx.server.url, token)).rejects.toThrow(/401|unauthori[sz]ed/i);
  });

  it('of a deleted user answers 401', async () => {
    const gone = await member('Gone');
    const { token } = await create(gone.session);
    expect((await as(token, '/auth/me')).status).toBe(200);
    await ctx.server.pool.query(`DELETE FROM svc_users WHERE id = $1`, [gone.id]);
    const res = await as(token, '/threads');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(REFUSED);
  });

  it(`is one of at most ${PERSONAL_TOKENS_MAX} live ones per person`, async () => {
    const many = await member('Many');
    const made: Created[] = [];
    for (let i = 0; i < PERSONAL_TOKENS_MAX; i++) made.push(await create(many.session, `token ${i}`));
    const refused = await as(many.session, '/me/tokens', { method: 'POST', json: { name: 'one more' } });
    expect(refused.status).toBe(409);
    expect((await refused.json()).error).toEqual({
      code: 'conflict',
      message: `you already have ${PERSONAL_TOKENS_MAX} personal access tokens, the most one person may hold: revoke one to create another`,
    });
    await as(many.session, `/me/tokens/${made[0]!.id}/revoke`, { method: 'POST' });
    await create(many.session, 'one more');
  });

  it('needs a name of 1 to 100 characters, and a caller with a token', async () => {
    for (const name of ['', '   ', 'x'.repeat(101)]) {
      const res = await as(ada.session, '/me/tokens', { method: 'POST', json: { name } });
      expect(res.status, JSON.stringify(name)).toBe(400);
    }
    await create(ada.session, 'x'.repeat(100));
    for (const [path, method] of [
      ['/me/tokens', 'GET'],
      ['/me/tokens', 'POST'],
      [`/me/tokens/${randomUUID()}/revoke`, 'POST'],
    ] as const) {
      const res = await as(null, path, { method, ...(method === 'POST' ? { json: { name: 'x' } } : {}) });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });
});

describe("the API token administrator's personal access token", () => {
  it('acts as the administrator, while the server has an API token', async () => {
    const { token, id } = await create(API_TOKEN, 'MCP clients');
    const me = await (await as(token, '/auth/me')).json();
    expect(me).toMatchObject({ user: { id: API_TOKEN_ADMIN.id, kind: 'api_token' }, instance_admin: true });
    expect((await as(token, '/orgs', { method: 'POST', json: { name: 'Made with a token' } })).status).toBe(201);
    expect((await list(API_TOKEN)).map((t) => t.id)).toContain(id);

    // A server on the same database that signs people in with OIDC and has no API token: nobody is that
    // administrator there, so her tokens give nothing; a person's token still works.
    const ada = await member('Ada elsewhere');
    const adas = await create(ada.session);
    let oidcOnly: TestServer | undefined;
    try {
      oidcOnly = await ctx.start({
        AUTH_ENABLED: 'true',
        SESSION_SECRET: SECRET,
        OIDC_ISSUER_URL: 'http://127.0.0.1:9/issuer',
      });
      const status = async (bearer: string) =>
        (await requestServer(oidcOnly!.url, '/auth/me', { headers: { authorization: `Bearer ${bearer}` } })).status;
      expect(await status(token)).toBe(401);
      expect(await status(adas.token)).toBe(200);
    } finally {
      await oidcOnly?.close();
    }
  });
});

describe('personal access tokens with AUTH_ENABLED=false', () => {
  it('are not needed, and the server says so', async () => {
    const open = await ctx.start({ AUTH_ENABLED: 'false' });
    try {
      for (const [path, init] of [
        ['/me/tokens', {}],
        ['/me/tokens', { method: 'POST', json: { name: 'x' } }],
        [`/me/tokens/${randomUUID()}/revoke`, { method: 'POST' }],
      ] as const) {
        const res = await open.request(path, init);
        expect(res.status, path).toBe(409);
        expect((await res.json()).error.message).toBe(
          'authentication is off on this server (AUTH_ENABLED=false): every request is served without a token, ' +
            'so no personal access token is needed',
        );
      }
    } finally {
      await open.close();
    }
  });
});
