import { describe, expect, it } from 'vitest';
import { ANONYMOUS_ADMIN, API_TOKEN_ADMIN } from '../../src-server/auth/principal';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID, DEFAULT_TEAM_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { signSession } from '../helpers/sessions';

/**
 * `GET /auth/me` gives every caller an id, the one its decisions are recorded under. For the API token's caller and
 * the anonymous administrator that is a fixed id, and the member routes take it as they take a signed-in user's:
 * what /auth/me hands out is a user id wherever one is asked for.
 */
const TOKEN = 'built-in-principals-test-token';
const SECRET = 'built-in-principals-test-session-secret';
const ctx = useIntegrationServer({
  model: false,
  catalog: false,
  server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: TOKEN, SESSION_SECRET: SECRET },
});

interface Me {
  user: { id: string; name: string; kind: string };
  instance_admin: boolean;
  memberships: { scope_type: string; scope_id: string; scope_name: string; role: string }[];
}
const me = async (server: TestServer) => (await (await server.request('/auth/me')).json()) as Me;

const SCOPES = [
  { path: 'orgs', type: 'org', id: DEFAULT_ORG_ID, name: 'Default organisation' },
  { path: 'teams', type: 'team', id: DEFAULT_TEAM_ID, name: 'Default team' },
  { path: 'projects', type: 'project', id: DEFAULT_PROJECT_ID, name: 'Default project' },
] as const;

/** Gives the caller's own /auth/me id a role on each default scope, reads it back, and takes it away again. */
async function roundTrip(server: TestServer, kind: string, name: string) {
  const before = await me(server);
  expect(before).toMatchObject({ user: { kind, name }, instance_admin: true, memberships: [] });
  const id = before.user.id;
  for (const scope of SCOPES) {
    const set = await server.request(`/${scope.path}/${scope.id}/members/${id}`, {
      method: 'PUT',
      json: { role: 'viewer' },
    });
    expect(set.status, scope.path).toBe(200);
    expect(await set.json()).toContainEqual({ user_id: id, name, email: null, role: 'viewer' });
    const listed = await server.request(`/${scope.path}/${scope.id}/members`);
    expect(await listed.json()).toContainEqual({ user_id: id, name, email: null, role: 'viewer' });
  }
  expect((await me(server)).memberships).toEqual(
    expect.arrayContaining(
      SCOPES.map((s) => ({ scope_type: s.type, scope_id: s.id, scope_name: s.name, role: 'viewer' })),
    ),
  );
  // A role below admin takes nothing away: the caller still administers the whole instance.
  const projects = (await (await server.request('/projects')).json()) as { id: string; role: string }[];
  expect(projects.find((p) => p.id === DEFAULT_PROJECT_ID)?.role).toBe('admin');
  expect((await server.request('/orgs', { method: 'POST', json: { name: `Made by ${kind}` } })).status).toBe(201);

  for (const scope of SCOPES) {
    const removed = await server.request(`/${scope.path}/${scope.id}/members/${id}`, { method: 'DELETE' });
    expect(removed.status, scope.path).toBe(204);
    const again = await server.request(`/${scope.path}/${scope.id}/members/${id}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect((await again.json()).error.message).toMatch(new RegExp(`^user ${id} is not a member of `));
  }
  expect((await me(server)).memberships).toEqual([]);
}

describe('the id GET /auth/me gives a caller who is not a signed-in user', () => {
  it("is the API token's caller's user id on the member routes", async () => {
    expect((await me(ctx.server)).user.id).toBe(API_TOKEN_ADMIN.id);
    await roundTrip(ctx.server, 'api_token', 'api-token');
  });

  it('is the anonymous administrator’s user id on the member routes when authentication is off', async () => {
    const open = await ctx.start({ AUTH_ENABLED: 'false' });
    try {
      expect((await me(open)).user.id).toBe(ANONYMOUS_ADMIN.id);
      await roundTrip(open, 'anonymous', 'anonymous');
    } finally {
      await open.close();
    }
  });

  it('is nobody’s sign-in: a session token naming it is refused', async () => {
    for (const id of [API_TOKEN_ADMIN.id, ANONYMOUS_ADMIN.id]) {
      const session = await signSession(id, SECRET);
      const res = await ctx.server.request('/auth/me', { headers: { authorization: `Bearer ${session}` } });
      expect(res.status, id).toBe(401);
      expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'invalid or expired token' } });
    }
  });
});
