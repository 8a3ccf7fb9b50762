import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { gatedAgent, summaryCommand, writeFixtureCatalog } from '../helpers/fixture-assets';
import { addUser, signSession } from '../helpers/sessions';
import { useIntegrationServer } from '../helpers/integration';
import { eventOrder, readEvents } from '../helpers/sse';

const ctx = useIntegrationServer();

afterEach(async () => {
  for (const node of ['dispatch', 'execute', 'summarize']) {
    await ctx.server.request(`/agents/summary/nodes/${node}/config`, { method: 'PUT', json: {} });
  }
});

const save = (agent: string, node: string, json: unknown) =>
  ctx.server.request(`/agents/${agent}/nodes/${node}/config`, { method: 'PUT', json });
const rule = (condition: string, match: string, target: string, priority: number) => ({
  condition,
  match,
  target,
  priority,
});

/** Summary's dispatch node config: the refusals below are mostly tried there. */
const DISPATCH_CONFIG = '/agents/summary/nodes/dispatch/config';

async function runSummary(message = 'summarise please') {
  const events = await readEvents(
    await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message } }),
  );
  return { events, runId: (events[0]!.data as { run_id: string }).run_id };
}

describe('node configuration', () => {
  it('is saved, read back, and shown apart from the contract defaults in the graph definition', async () => {
    const config = {
      instructions_override: 'Answer as a terse checklist.',
      classification_labels: 'ok, needs-work',
      routing_overrides: [rule('contains', 'skip', 'summarize', 10)],
      notes: 'tuned for release week',
    };
    const res = await save('summary', 'dispatch', config);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ...config, warnings: [] });
    expect(await (await ctx.server.request('/agents/summary/nodes/dispatch/config')).json()).toEqual(config);

    const definition = await (await ctx.server.request('/agents/summary/graph-definition')).json();
    const dispatch = definition.phases.find((p: { id: string }) => p.id === 'dispatch');
    expect(dispatch).toMatchObject({
      description: 'The dispatch phase.',
      expected_output: 'dispatch notes',
      overrides: config,
    });
    expect(definition.phases.find((p: { id: string }) => p.id === 'execute').overrides).toBeNull();
    // Without ?project_id or ?org_id the administrator works in the default project, where such runs go.
    expect(dispatch.overrides_from).toBe('project');
    const own = await ctx.server.request(`${DISPATCH_CONFIG}?project_id=${DEFAULT_PROJECT_ID}`);
    expect(await own.json()).toEqual(config);
    const organisation = await ctx.server.request(`${DISPATCH_CONFIG}?org_id=${DEFAULT_ORG_ID}`);
    expect((await organisation.json()).instructions_override).toBeNull();
    expect(definition.edges).toEqual([
      { from: 'dispatch', to: 'execute' },
      { from: 'execute', to: 'summarize' },
    ]);
  });

  it.each([
    ['an unknown agent', '/agents/nope/nodes/dispatch/config', {}, 404, 'no agent or command named "nope"'],
    ['an unknown node', '/agents/summary/nodes/nope/config', {}, 404, 'summary has no node "nope"'],
    [
      'an unknown condition',
      DISPATCH_CONFIG,
      { routing_overrides: [rule('sounds_like', 'x', 'execute', 1)] },
      400,
      'routing_overrides.0.condition',
    ],
    [
      'a target outside the graph',
      DISPATCH_CONFIG,
      { routing_overrides: [rule('always', '', 'nowhere', 1)] },
      400,
      'routing_overrides.0.target: node "nowhere" is not in the graph of summary',
    ],
    [
      'a regex that does not compile',
      DISPATCH_CONFIG,
      { routing_overrides: [rule('regex', '(open', 'execute', 1)] },
      400,
      'routing_overrides.0.match: invalid regular expression',
    ],
    [
      'a regex that is too long',
      DISPATCH_CONFIG,
      { routing_overrides: [rule('regex', 'a'.repeat(501), 'execute', 1)] },
      400,
      'routing_overrides.0.match',
    ],
    [
      'a match missing for contains',
      DISPATCH_CONFIG,
      { routing_overrides: [rule('contains', '', 'execute', 1)] },
      400,
      'routing_overrides.0.match: a contains rule needs a match value',
    ],
    [
      'duplicate priorities',
      DISPATCH_CONFIG,
      { routing_overrides: [rule('always', '', 'execute', 1), rule('contains', 'x', 'summarize', 1)] },
      400,
      'routing_overrides.1.priority: priority 1 is already used by routing_overrides.0',
    ],
    [
      'rules on a gate',
      '/agents/review/nodes/gate/config',
      { routing_overrides: [rule('always', '', 'output', 1)] },
      400,
      '"gate" is a gate node: its edges are defined by the graph',
    ],
  ])('refuses %s', async (_what, path, body, status, message) => {
    const res = await ctx.server.request(path, { method: 'PUT', json: body });
    expect(res.status).toBe(status);
    expect((await res.json()).error.message).toContain(message);
  });
});

describe('routing rules in runs', () => {
  it('the first matching rule by priority decides the next node, emits route_matched and is recorded', async () => {
    await save('summary', 'dispatch', {
      routing_overrides: [
        rule('always', '', 'execute', 50),
        rule('contains', 'SKIP', 'summarize', 10),
        rule('contains', 'skip', 'dispatch', 20),
      ],
    });
    ctx.model.reply(['please', ' skip', ' ahead']);
    const { events, runId } = await runSummary();
    expect(eventOrder(events)).toEqual([
      'run_start',
      'node_enter:dispatch',
      'token:dispatch',
      'node_exit:dispatch',
      'route_matched',
      'node_enter:summarize',
      'token:summarize',
      'node_exit:summarize',
      'run_done',
    ]);
    const matched = events.find((e) => e.name === 'route_matched')!.data;
    expect(matched).toEqual({
      type: 'route_matched',
      from: 'dispatch',
      to: 'summarize',
      rule: rule('contains', 'SKIP', 'summarize', 10),
      source: 'override',
    });
    const detail = await (await ctx.server.request(`/runs/${runId}`)).json();
    expect(detail.routes).toEqual([
      {
        from: 'dispatch',
        to: 'summarize',
        rule: rule('contains', 'SKIP', 'summarize', 10),
        source: 'override',
        at: expect.any(Number),
      },
    ]);
    // The thread's history names the rule at the step it chose the route.
    const checkpoints = await (await ctx.server.request(`/threads/${detail.thread_id}/checkpoints`)).json();
    const routed = checkpoints.find((c: { node: string | null }) => c.node === 'dispatch');
    expect(routed.state).toMatchObject({
      route: 'summarize',
      route_rule: { rule: rule('contains', 'SKIP', 'summarize', 10), source: 'override' },
    });
    expect(detail.nodes.map((n: { node_id: string }) => n.node_id)).toEqual(['dispatch', 'summarize']);
  });

  it('falls back to the graph edges when no rule matches', async () => {
    await save('summary', 'dispatch', { routing_overrides: [rule('starts_with', 'ZZZ', 'summarize', 1)] });
    const { events } = await runSummary();
    expect(events.some((e) => e.name === 'route_matched')).toBe(false);
    expect(events.filter((e) => e.name === 'node_enter').map((e) => (e.data as { node: string }).node)).toEqual([
      'dispatch',
      'execute',
      'summarize',
    ]);
  });

  it("puts an instructions override and classification labels into the node's prompt", async () => {
    await save('summary', 'execute', {
      instructions_override: 'Write it as a haiku.',
      classification_labels: 'small, large',
    });
    await runSummary();
    const system = (request: unknown) =>
      JSON.stringify((request as { messages: { role: string; content: string }[] }).messages[0]);
    const [dispatch, execute] = ctx.model.requests.slice(-3);
    expect(system(execute)).toContain('Write it as a haiku.');
    expect(system(execute)).toContain('small, large');
    expect(system(execute)).not.toContain('The execute phase.');
    expect(system(dispatch)).not.toContain('Write it as a haiku.');
  });

  it('ends a routing loop with a clear error instead of hanging', async () => {
    await save('summary', 'execute', { routing_overrides: [rule('always', '', 'dispatch', 1)] });
    const { events, runId } = await runSummary();
    const last = events.at(-1)!.data;
    expect(last).toMatchObject({
      type: 'run_error',
      error_detail: 'RoutingLoopError: node "dispatch" was entered 9 times in one run: its routing rules form a loop',
    });
    const run = await (await ctx.server.request(`/runs/${runId}`)).json();
    expect(run.status).toBe('error');
  });
});

describe("an asset's own routes", () => {
  it('apply when no override is saved, and a saved override replaces them', async () => {
    const routed = {
      ...summaryCommand,
      name: 'routed',
      phases: summaryCommand.phases.map((p) =>
        p.id === 'dispatch'
          ? { ...p, routes: [{ condition: 'contains' as const, match: 'urgent', target: 'summarize', priority: 1 }] }
          : p,
      ),
    };
    const own = await ctx.start({ GENERATED_DIR: await writeFixtureCatalog([routed]) });
    try {
      // The graph definition carries them, so the studio can show them next to the overrides.
      const graph = await (await own.request('/agents/routed/graph-definition')).json();
      expect(graph.phases.find((p: { id: string }) => p.id === 'dispatch').routes).toEqual([
        { condition: 'contains', match: 'urgent', target: 'summarize', priority: 1 },
      ]);
      expect(graph.phases.find((p: { id: string }) => p.id === 'execute').routes).toEqual([]);
      ctx.model.reply(['this is urgent']);
      const run = async () =>
        readEvents(await own.request('/graphs/routed/run', { method: 'POST', json: { message: 'x' } }));
      expect((await run()).find((e) => e.name === 'route_matched')?.data).toMatchObject({
        from: 'dispatch',
        to: 'summarize',
        source: 'asset',
      });
      await own.request('/agents/routed/nodes/dispatch/config', {
        method: 'PUT',
        json: { routing_overrides: [rule('contains', 'nothing-matches', 'summarize', 1)] },
      });
      expect((await run()).some((e) => e.name === 'route_matched')).toBe(false);
    } finally {
      await own.close();
    }
  });
});

describe('routing rules that skip a gate', () => {
  const SECRET = 'a-session-secret-for-the-phase-config-tests-01';

  it('are saved with a warning naming the gate; a rule to the gate itself or back has none', async () => {
    const res = await save('review', 'analysis', {
      routing_overrides: [rule('contains', 'ship', 'output', 10), rule('always', '', 'gate', 20)],
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.warnings).toEqual([
      {
        rule: 0,
        gate: 'gate',
        decide_role: 'member',
        message:
          'rule 1 (contains "ship" → output) skips the gate "Gate": a run it matches goes on to output without ' +
          'waiting for the approval that member or higher gives',
      },
    ]);
    expect((await save('review', 'output', { routing_overrides: [rule('always', '', 'analysis', 1)] })).status).toBe(
      200,
    );
    await save('review', 'analysis', {});
    await save('review', 'output', {});
  });

  it('is refused with 403 when the gate asks for a higher role than its author holds, and saved when not', async () => {
    const own = await ctx.start({
      AUTH_ENABLED: 'true',
      SESSION_SECRET: SECRET,
      GENERATED_DIR: await writeFixtureCatalog([
        gatedAgent('admin-review', { decide_role: 'admin' }),
        gatedAgent('owner-review', { decide_role: 'owner' }),
      ]),
    });
    try {
      const id = await addUser(own.pool, 'Otto', [['project', DEFAULT_PROJECT_ID, 'owner']]);
      const headers = { authorization: `Bearer ${await signSession(id, SECRET, '1h', 'Otto')}` };
      const put = (agent: string, json: unknown) =>
        own.request(`/agents/${agent}/nodes/analysis/config?project_id=${DEFAULT_PROJECT_ID}`, {
          method: 'PUT',
          json,
          headers,
        });
      const skip = { routing_overrides: [rule('always', '', 'gate', 5), rule('contains', 'ship', 'output', 10)] };

      const refused = await put('admin-review', skip);
      expect(refused.status).toBe(403);
      const error = (await refused.json()).error;
      expect(error.code).toBe('forbidden');
      expect(error.message).toBe(
        'a routing rule may not skip a gate its author may not decide: routing_overrides.1.target: skips the gate ' +
          '"Gate", which only admin or higher may decide; your role on this project is owner',
      );
      expect(error.details.fields).toEqual([
        {
          field: 'routing_overrides.1.target',
          message: 'skips the gate "Gate", which only admin or higher may decide; your role on this project is owner',
        },
      ]);
      // Nothing was saved.
      const kept = await own.request(`/agents/admin-review/nodes/analysis/config?project_id=${DEFAULT_PROJECT_ID}`, {
        headers,
      });
      expect((await kept.json()).routing_overrides).toEqual([]);

      // The same rule on a gate an owner may decide is saved, with its warning.
      const saved = await put('owner-review', skip);
      expect(saved.status).toBe(200);
      expect((await saved.json()).warnings).toMatchObject([{ rule: 1, gate: 'gate', decide_role: 'owner' }]);

      // A rule that skips nothing is saved on the admin's gate too.
      const fine = await put('admin-review', { routing_overrides: [rule('always', '', 'gate', 5)] });
      expect(fine.status).toBe(200);
      expect((await fine.json()).warnings).toEqual([]);
    } finally {
      await own.close();
    }
  });
});
