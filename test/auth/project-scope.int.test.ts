import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';
import { addUser, signSession } from '../helpers/sessions';

const SECRET = 'a-session-secret-for-tests-only-0123456789';
const ctx = useIntegrationServer({ server: false });

/**
 * Work outside the default organisation: an instance admin creates "Acme" with a team and two projects, and
 * people whose roles are on a project (or on the team) of it work there without naming anything they cannot see.
 */
describe('the project being worked in', () => {
  let server: TestServer;
  let acme: { org: string; team: string; alpha: string; beta: string };

  const created = async (path: string, json: unknown) =>
    ((await (await server.request(path, { method: 'POST', json })).json()) as { id: string }).id;

  async function person(name: string, roles: [scope: 'org' | 'team' | 'project', id: string, role: string][]) {
    const token = await signSession(await addUser(server.pool, name, roles), SECRET);
    return (path: string, init: { method?: string; json?: unknown } = {}) =>
      fetch(`${server.url}${path}`, {
        method: init.method ?? 'GET',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      });
  }

  beforeAll(async () => {
    server = await ctx.start({
      AUTH_ENABLED: 'true',
      SESSION_SECRET: SECRET,
      SVC_API_TOKEN: 'instance-admin-token-0123456789',
    });
    const org = await created('/orgs', { name: 'Acme' });
    const team = await created('/teams', { name: 'Platform', parent_id: org });
    acme = {
      org,
      team,
      alpha: await created('/projects', { name: 'Alpha', parent_id: team }),
      beta: await created('/projects', { name: 'Beta', parent_id: team }),
    };
  });
  afterAll(() => server?.close());

  const threadOf = async (res: Response) => {
    expect(res.status).toBe(200);
    const events = await readEvents(res);
    return (events[0]!.data as { thread_id: string }).thread_id;
  };
  const projectOfThread = async (threadId: string) =>
    (await (await server.request(`/threads/${threadId}`)).json()).project_id as string;

  it("a project owner in another organisation reads the graph, saves her project's overrides and her runs apply them", async () => {
    const as = await person('alice', [['project', acme.alpha, 'owner']]);
    // Nothing named: her only project.
    const graph = await as('/agents/summary/graph-definition');
    expect(graph.status).toBe(200);
    expect((await graph.json()).phases.every((p: { overrides_from: null }) => p.overrides_from === null)).toBe(true);

    // The organisation's record for one node, her project's own for another.
    expect(
      (
        await server.request(`/agents/summary/nodes/dispatch/config?org_id=${acme.org}`, {
          method: 'PUT',
          json: { instructions_override: 'Acme-wide dispatch.' },
        })
      ).status,
    ).toBe(200);
    const saved = await as(`/agents/summary/nodes/execute/config?project_id=${acme.alpha}`, {
      method: 'PUT',
      json: { instructions_override: 'Alpha writes haiku.' },
    });
    expect(saved.status).toBe(200);
    // She may not change the organisation's, which other projects' runs apply.
    const refused = await as(`/agents/summary/nodes/execute/config?org_id=${acme.org}`, {
      method: 'PUT',
      json: { instructions_override: 'for everyone' },
    });
    expect(refused.status).toBe(403);
    // But she may read it: she works inside the organisation.
    expect((await as(`/agents/summary/nodes/dispatch/config?org_id=${acme.org}`)).status).toBe(200);
    // And the default organisation is none of her business.
    expect((await as(`/agents/summary/graph-definition?org_id=${DEFAULT_ORG_ID}`)).status).toBe(404);

    const effective = await (await as(`/agents/summary/graph-definition?project_id=${acme.alpha}`)).json();
    const phase = (id: string) => effective.phases.find((p: { id: string }) => p.id === id);
    expect(phase('dispatch')).toMatchObject({
      overrides: { instructions_override: 'Acme-wide dispatch.' },
      overrides_from: 'organisation',
    });
    expect(phase('execute')).toMatchObject({
      overrides: { instructions_override: 'Alpha writes haiku.' },
      overrides_from: 'project',
    });
    expect(phase('summarize')).toMatchObject({ overrides: null, overrides_from: null });
    // Her project's own record only, nothing inherited.
    expect(await (await as(`/agents/summary/nodes/dispatch/config?project_id=${acme.alpha}`)).json()).toMatchObject({
      instructions_override: null,
    });

    const system = (request: unknown) =>
      JSON.stringify((request as { messages: { role: string; content: string }[] }).messages[0]);
    ctx.model.reply(['fine']);
    const threadId = await threadOf(await as('/graphs/summary/run', { method: 'POST', json: { message: 'go' } }));
    expect(await projectOfThread(threadId)).toBe(acme.alpha);
    const [dispatch, execute] = ctx.model.requests.slice(-3);
    expect(system(dispatch)).toContain('Acme-wide dispatch.');
    expect(system(execute)).toContain('Alpha writes haiku.');

    // Beta's runs apply the organisation's record only.
    await threadOf(
      await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'go', project_id: acme.beta } }),
    );
    const [betaDispatch, betaExecute] = ctx.model.requests.slice(-3);
    expect(system(betaDispatch)).toContain('Acme-wide dispatch.');
    expect(system(betaExecute)).not.toContain('Alpha writes haiku.');

    // Her project's record removed, the phase applies the organisation's again (here: none).
    const alphaExecute = `/agents/summary/nodes/execute/config?project_id=${acme.alpha}`;
    expect((await as(alphaExecute, { method: 'DELETE' })).status).toBe(204);
    expect((await as(alphaExecute, { method: 'DELETE' })).status).toBe(404);
    const after = await (await as(`/agents/summary/graph-definition?project_id=${acme.alpha}`)).json();
    expect(after.phases.find((p: { id: string }) => p.id === 'execute')).toMatchObject({
      overrides: null,
      overrides_from: null,
    });
    expect((await as(`/agents/summary/nodes/dispatch/config?org_id=${acme.org}`, { method: 'DELETE' })).status).toBe(
      403,
    );
  });

  it('a run without project_id goes to the caller’s only project, or is refused with the choices listed', async () => {
    // Member on Alpha, viewer on Beta: Alpha is the only project she may run in.
    const one = await person('bob', [
      ['project', acme.alpha, 'member'],
      ['project', acme.beta, 'viewer'],
    ]);
    ctx.model.reply(['fine']);
    const threadId = await threadOf(await one('/graphs/summary/run', { method: 'POST', json: { message: 'hi' } }));
    expect(await projectOfThread(threadId)).toBe(acme.alpha);
    // In the thread, a project_id must be the thread's own.
    const mismatch = await one('/graphs/summary/run', {
      method: 'POST',
      json: { message: 'again', thread_id: threadId, project_id: acme.beta },
    });
    expect(mismatch.status).toBe(400);
    expect((await mismatch.json()).error.message).toContain('project_id');
    // Named: a project where she is only a viewer is refused.
    expect(
      (await one('/graphs/summary/run', { method: 'POST', json: { message: 'hi', project_id: acme.beta } })).status,
    ).toBe(403);

    // A team member may run in both projects: she must choose.
    const several = await person('carol', [['team', acme.team, 'member']]);
    const refused = await several('/graphs/summary/run', { method: 'POST', json: { message: 'hi' } });
    expect(refused.status).toBe(400);
    const body = await refused.json();
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toContain('give project_id');
    expect(body.error.message).toContain(`Alpha (${acme.alpha})`);
    expect(body.error.details.choices).toEqual([
      { id: acme.alpha, name: 'Alpha' },
      { id: acme.beta, name: 'Beta' },
    ]);
    const thread = await several('/threads', { method: 'POST', json: { agent: 'summary' } });
    expect(thread.status).toBe(400);
    const chosen = await threadOf(
      await several('/graphs/summary/run', { method: 'POST', json: { message: 'hi', project_id: acme.beta } }),
    );
    expect(await projectOfThread(chosen)).toBe(acme.beta);

    // Only a viewer anywhere: 403; no role at all: 404, never the default project.
    const viewer = await person('dave', [['project', acme.beta, 'viewer']]);
    expect((await viewer('/graphs/summary/run', { method: 'POST', json: { message: 'hi' } })).status).toBe(403);
    const nobody = await person('erin', []);
    const none = await nobody('/graphs/summary/run', { method: 'POST', json: { message: 'hi' } });
    expect(none.status).toBe(404);
    expect((await nobody('/threads', { method: 'POST', json: { agent: 'summary' } })).status).toBe(404);
  });

  it('phase configuration without a project: the only one, else a 400 listing the choices', async () => {
    const several = await person('frank', [['team', acme.team, 'owner']]);
    const res = await several('/agents/summary/graph-definition');
    expect(res.status).toBe(400);
    expect((await res.json()).error.details.choices.map((c: { name: string }) => c.name)).toEqual(['Alpha', 'Beta']);
    expect((await several(`/agents/summary/graph-definition?project_id=${acme.beta}`)).status).toBe(200);
    const both = await several(`/agents/summary/graph-definition?project_id=${acme.beta}&org_id=${acme.org}`);
    expect(both.status).toBe(400);
  });
});
