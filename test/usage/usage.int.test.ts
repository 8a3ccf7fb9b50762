import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import type { CallTotals, UsageReport, UsageRow } from '../../src-server/contracts/usage';
import type { ReportedUsage } from '../fixtures/fake-models';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents } from '../helpers/sse';

/**
 * The usage accounting end to end (docs/observability.md#accounting): runs through the real server by people of two
 * projects, against the stand-in model servers speaking each provider's protocol, with a price table in the
 * configuration. What GET /usage and a run's detail add up is held to what the stand-ins reported, call by call.
 */
const SECRET = 'a-session-secret-for-the-usage-tests-0123456789';
const API_TOKEN = 'usage-test-admin-token-0123456789';
const PRICES = {
  'cloud_c:gpt-test': { input_per_mtok: 2.5, output_per_mtok: 10 },
  cloud_b: { input_per_mtok: 3, output_per_mtok: 15 },
};

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let catalog: string;
let project: string;

/** A run as the test made it: who, where, on which model, and the counts the stand-in reported for its calls. */
interface Made {
  runId: string;
  threadId: string;
  by: string;
  projectId: string;
  model: string;
  reported: ReportedUsage[];
}
const made: Made[] = [];
const people = {} as Record<'ann' | 'bob' | 'olive' | 'carl', { id: string; token: string }>;
let second: { org: string; project: string };

const asAdmin = (p: string, init?: Parameters<TestServer['request']>[1]) => server.request(p, init);
const as = (token: string, p: string) => server.request(p, { headers: { authorization: `Bearer ${token}` } });

async function report(token: string | null, query = ''): Promise<UsageReport> {
  const res = token ? await as(token, `/usage${query}`) : await asAdmin(`/usage${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as UsageReport;
}

/** Runs the summary command (three model calls) as `who` in `projectId` on `model`. */
async function run(who: keyof typeof people | 'admin', projectId: string, model: string): Promise<Made> {
  const before = ctx.model.reported.length;
  ctx.model.reply(['Counted ', 'and ', 'priced.']);
  const headers: Record<string, string> = who === 'admin' ? {} : { authorization: `Bearer ${people[who].token}` };
  const res = await server.request('/graphs/summary/run', {
    method: 'POST',
    json: { message: `a run by ${who} on ${model}`, model, project_id: projectId },
    headers,
  });
  expect(res.status).toBe(200);
  const events = await readEvents(res);
  expect(events.at(-1)!.data.type).toBe('run_done');
  const first = events[0]!.data as { run_id: string; thread_id: string };
  const byId = who === 'admin' ? '00000000-0000-0000-0000-000000000001' : people[who].id;
  const one = { runId: first.run_id, threadId: first.thread_id, by: byId, projectId, model };
  const entry = { ...one, reported: ctx.model.reported.slice(before) };
  made.push(entry);
  return entry;
}

const sum = (calls: ReportedUsage[], key: 'input_tokens' | 'output_tokens') => calls.reduce((n, c) => n + c[key], 0);

/** The cost the configured prices give these calls; null for a model without a price. */
function costOf(model: string, calls: ReportedUsage[]): number | null {
  const price = PRICES[model as keyof typeof PRICES] ?? PRICES[model.split(':')[0] as keyof typeof PRICES];
  if (!price) return null;
  return calls.reduce(
    (n, c) => n + (c.input_tokens * price.input_per_mtok + c.output_tokens * price.output_per_mtok) / 1e6,
    0,
  );
}

/** The figures of the runs given, as the stand-ins reported them and the prices make them. */
function expected(runs: Made[]) {
  const calls = runs.flatMap((r) => r.reported);
  const costs = runs.map((r) => costOf(r.model, r.reported));
  const known = costs.filter((c): c is number => c !== null);
  return {
    runs: runs.length,
    calls: calls.length,
    input_tokens: sum(calls, 'input_tokens'),
    output_tokens: sum(calls, 'output_tokens'),
    cost_usd: known.length ? known.reduce((a, b) => a + b, 0) : null,
    unpriced_calls: runs.filter((r) => costOf(r.model, r.reported) === null).reduce((n, r) => n + r.reported.length, 0),
  };
}

/** Figures held to what the runs' calls reported: a report's (UsageFigures, UsageRow) or a run's (CallTotals). */
function expectFigures(actual: Pick<CallTotals, 'calls' | 'cost_usd'> & { runs?: number }, runs: Made[]): void {
  const { cost_usd, runs: count, ...counts } = expected(runs);
  expect(actual).toMatchObject(counts);
  if (actual.runs !== undefined) expect(actual.runs).toBe(count);
  if (cost_usd === null) expect(actual.cost_usd).toBeNull();
  else expect(actual.cost_usd).toBeCloseTo(cost_usd, 12);
}

const runsOf = (rows: UsageRow[]) => rows.map((r) => r.run_id).sort();
const ids = (runs: Made[]) => runs.map((r) => r.runId).sort();

beforeAll(async () => {
  catalog = await writeFixtureCatalog([toolAgent]);
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'usage-'));
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\n');
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: catalog,
    MODEL_PRICES: JSON.stringify(PRICES),
    CLOUD_A_API_KEY: 'gemini-test-key',
    CLOUD_A_BASE_URL: ctx.model.url,
    CLOUD_B_API_KEY: 'anthropic-test-key',
    CLOUD_B_BASE_URL: ctx.model.url,
    CLOUD_C_API_KEY: 'openai-test-key',
    CLOUD_C_BASE_URL: `${ctx.model.url}/v1`,
  });
  // A second organisation with its project, made by the instance admin.
  const create = async (p: string, json: object) =>
    ((await (await asAdmin(p, { method: 'POST', json })).json()) as { id: string }).id;
  const org = await create('/orgs', { name: 'Second org' });
  const team = await create('/teams', { name: 'Second team', parent_id: org });
  second = { org, project: await create('/projects', { name: 'Second project', parent_id: team }) };
  const person = async (name: string, roles: Parameters<typeof addUser>[2]) => {
    const id = await addUser(server.pool, name, roles);
    return { id, token: await signSession(id, SECRET, '1h', name) };
  };
  people.ann = await person('Ann Member', [
    ['project', DEFAULT_PROJECT_ID, 'member'],
    ['project', second.project, 'member'],
  ]);
  people.bob = await person('Bob Member', [['project', DEFAULT_PROJECT_ID, 'member']]);
  people.olive = await person('Olive Owner', [['project', DEFAULT_PROJECT_ID, 'owner']]);
  people.carl = await person('Carl Admin', [['org', org, 'admin']]);

  await run('ann', DEFAULT_PROJECT_ID, 'cloud_c:gpt-test');
  await run('bob', DEFAULT_PROJECT_ID, 'cloud_b:claude-test');
  await run('ann', second.project, 'cloud_a:gemini-test');
  await run('bob', DEFAULT_PROJECT_ID, 'fake-model');
  await run('ann', DEFAULT_PROJECT_ID, 'cloud_c:gpt-test');
}, 120_000);
afterAll(async () => {
  await server?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
  fs.rmSync(project, { recursive: true, force: true });
});

describe('the usage accounting', () => {
  it('adds up, run by run and in all, exactly the tokens the stand-ins reported, and costs them at the configured prices', async () => {
    const byRun = await report(null, '?group_by=run');
    expect(runsOf(byRun.rows)).toEqual(ids(made));
    for (const r of made) {
      expect(r.reported).toHaveLength(3);
      expectFigures(
        byRun.rows.find((row) => row.run_id === r.runId)!,
        [r],
      );
    }
    expectFigures(byRun.total, made);
    // The cloud stand-ins count the prompt as their APIs do: more than the one token a constant would give.
    expect(made.every((r) => r.reported.every((c) => c.input_tokens > 10))).toBe(true);
    // A cloud model without a price, and a local one, cost null (unknown), not 0.
    const unpriced = byRun.rows.filter((row) => row.cost_usd === null).map((row) => row.run_id);
    expect(unpriced.sort()).toEqual(ids(made.filter((r) => ['cloud_a:gemini-test', 'fake-model'].includes(r.model))));
    expect(byRun.total.unpriced_calls).toBe(6);
  });

  it('groups by project and model over the two projects, by phase, and by day', async () => {
    const grouped = await report(null, '?group_by=project,model');
    const of = (projectId: string, model: string) => made.filter((r) => r.projectId === projectId && r.model === model);
    const keys = grouped.rows.map((row) => `${row.project_id} ${row.model}`).sort();
    const wanted = [...new Set(made.map((r) => `${r.projectId} ${r.model}`))].sort();
    expect(keys).toEqual(wanted);
    for (const row of grouped.rows) expectFigures(row, of(row.project_id!, row.model!));
    expect(grouped.rows.find((row) => row.project_id === second.project)!.project_name).toBe('Second project');

    const phases = await report(null, '?group_by=phase');
    expect(phases.rows.map((row) => [row.phase, row.calls])).toEqual([
      ['dispatch', made.length],
      ['execute', made.length],
      ['summarize', made.length],
    ]);

    const days = await report(null, '?group_by=day,user');
    const today = new Date().toISOString().slice(0, 10);
    expect(days.rows.every((row) => row.day === today)).toBe(true);
    expect(days.rows.find((row) => row.user_id === people.ann.id)!.user_name).toBe('Ann Member');
    // By the hour: the last minutes' calls are in this hour (or, just past the hour, the one before), counted once.
    const hours = await report(null, '?group_by=hour');
    const thisHour = (at: number) => `${new Date(at).toISOString().slice(0, 13)}:00Z`;
    const recent = new Set([thisHour(Date.now()), thisHour(Date.now() - 3600_000)]);
    expect(hours.rows.length).toBeGreaterThan(0);
    expect(hours.rows.every((row) => recent.has(row.hour!) && row.day === undefined)).toBe(true);
    expect(hours.rows.reduce((sum, row) => sum + row.calls, 0)).toBe(hours.total.calls);
    // Another range holds none of them.
    const later = await report(null, `?from=${encodeURIComponent(new Date(Date.now() + 3600_000).toISOString())}`);
    expect(later.total).toMatchObject({ runs: 0, calls: 0, input_tokens: 0, cost_usd: null });
  });

  it('keeps the local runtime apart: its load and generation time and slot wait, none for cloud calls', async () => {
    const byModel = await report(null, '?group_by=model');
    const local = byModel.rows.find((row) => row.model === 'fake-model')!;
    expect(local.avg_generation_ms).toEqual(expect.any(Number));
    expect(local.avg_load_ms).toEqual(expect.any(Number));
    expect(local.avg_queue_wait_ms).toEqual(expect.any(Number));
    const cloud = byModel.rows.find((row) => row.model === 'cloud_c:gpt-test')!;
    expect(cloud).toMatchObject({ avg_generation_ms: null, avg_load_ms: null, avg_queue_wait_ms: null });
    expect(cloud.avg_duration_ms).toBeGreaterThan(0);
  });

  it("shows a member her own spend alone, an owner her project's, another tenant's project as 404", async () => {
    const mine = (who: string) => made.filter((r) => r.by === who);
    const ann = await report(people.ann.token, '?group_by=run');
    expect(runsOf(ann.rows)).toEqual(ids(mine(people.ann.id)));
    expectFigures(ann.total, mine(people.ann.id));
    const bob = await report(people.bob.token, '?group_by=run');
    expect(runsOf(bob.rows)).toEqual(ids(mine(people.bob.id)));
    // Bob's spend is none of Ann's, even named by the project they share.
    const annInDefault = await report(people.ann.token, `?group_by=user&project_id=${DEFAULT_PROJECT_ID}`);
    expect(annInDefault.rows.map((row) => row.user_id)).toEqual([people.ann.id]);

    // The owner of the default project sees every call in it, and nothing of the second project.
    const olive = await report(people.olive.token, '?group_by=run');
    expect(runsOf(olive.rows)).toEqual(ids(made.filter((r) => r.projectId === DEFAULT_PROJECT_ID)));
    // The second organisation's admin sees its project whole, and the default project is not there for him.
    const carl = await report(people.carl.token, '?group_by=run');
    expect(runsOf(carl.rows)).toEqual(ids(made.filter((r) => r.projectId === second.project)));
    expect((await as(people.carl.token, `/usage?project_id=${DEFAULT_PROJECT_ID}`)).status).toBe(404);
    expect((await as(people.olive.token, `/usage?org_id=${second.org}`)).status).toBe(404);
    const inOrg = await report(people.ann.token, `?org_id=${second.org}&group_by=run`);
    expect(runsOf(inOrg.rows)).toEqual(ids(made.filter((r) => r.projectId === second.project)));
  });

  it("gives a run's detail its tokens, cost and time per phase, for those who may see its spend", async () => {
    const annRun = made.find((r) => r.by === people.ann.id && r.model === 'cloud_c:gpt-test')!;
    const detail = (await (await as(people.ann.token, `/runs/${annRun.runId}`)).json()) as RunDetail;
    expectFigures(detail.usage!, [annRun]);
    expect(detail.usage!.phases.map((p) => [p.phase, p.input_tokens, p.output_tokens])).toEqual(
      ['dispatch', 'execute', 'summarize'].map((phase, i) => [
        phase,
        annRun.reported[i]!.input_tokens,
        annRun.reported[i]!.output_tokens,
      ]),
    );
    expect(detail.usage!.duration_ms).toBeGreaterThan(0);
    // Bob may read Ann's run (a member of its project), not what it cost; its owner may.
    const bobReads = (await (await as(people.bob.token, `/runs/${annRun.runId}`)).json()) as RunDetail;
    expect(bobReads.status).toBe('completed');
    expect(bobReads.usage).toBeNull();
    const oliveReads = (await (await as(people.olive.token, `/runs/${annRun.runId}`)).json()) as RunDetail;
    expect(oliveReads.usage!.cost_usd).toBeCloseTo(costOf(annRun.model, annRun.reported)!, 12);
  });

  it('counts a turn replayed after a pause at a tool call once: only the calls the runtime answered', async () => {
    const before = ctx.model.reported.length;
    ctx.model.toolTurns = [[{ name: 'project__write_file', arguments: { path: 'notes.md', content: 'hello' } }]];
    const events = await readEvents(
      await asAdmin('/graphs/tool-review/run', {
        method: 'POST',
        json: { message: 'write it down', project_path: project },
      }),
    );
    const waiting = events.at(-1)!;
    expect(waiting.data.type).toBe('tool_waiting');
    const { run_id: runId, thread_id: threadId } = events[0]!.data as { run_id: string; thread_id: string };
    const callId = (waiting.data as { tool_call: { call_id: string } }).tool_call.call_id;
    ctx.model.reply(['Written.']);
    const accepted = await asAdmin(`/threads/${threadId}/tool-calls/${callId}/approve`, { method: 'POST', json: {} });
    expect(accepted.status).toBe(202);
    const rest = await readEvents(
      await asAdmin(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(waiting.id) } }),
    );
    expect(rest.at(-1)!.data.type).toBe('gate_waiting');
    expect(fs.readFileSync(path.join(project, 'notes.md'), 'utf8')).toBe('hello');

    // intake: the turn that called the tool, replayed when the node ran again after the decision, and the turn after
    // the tool's answer; then analysis. The runtime answered three calls, and three are counted.
    const reported = ctx.model.reported.slice(before);
    expect(reported).toHaveLength(3);
    const detail = (await (await asAdmin(`/runs/${runId}`)).json()) as RunDetail;
    expect(detail.usage).toMatchObject({
      calls: 3,
      input_tokens: sum(reported, 'input_tokens'),
      output_tokens: sum(reported, 'output_tokens'),
      cost_usd: null,
      unpriced_calls: 3,
    });
    expect(detail.usage!.phases.map((p) => [p.phase, p.calls])).toEqual([
      ['intake', 2],
      ['analysis', 1],
    ]);
    expect(detail.usage!.load_ms).toEqual(expect.any(Number));
    expect(detail.usage!.generation_ms).toEqual(expect.any(Number));
  });

  it('lists at most 5,000 groups, says when it cut, and still totals every call', async () => {
    const [one] = made;
    // 5,001 calls of one run, a day apart, years before the other tests' calls: 5,001 days to group by.
    await server.pool.query(
      `INSERT INTO svc_model_calls (id, run_id, node_id, project_id, user_id, agent, provider, model, input_tokens,
                                    output_tokens, duration_ms, created_at)
       SELECT gen_random_uuid(), $1, 'summarize', $2, NULL, 'summary', 'local', 'fake-model', 1, 2, 5,
              timestamptz '2000-01-01' + make_interval(days => n)
         FROM generate_series(0, 5000) AS n`,
      [one!.runId, one!.projectId],
    );
    const answer = await report(null, '?group_by=day&from=2000-01-01T00:00:00Z&to=2014-01-01T00:00:00Z');
    expect(answer.truncated).toBe(true);
    expect(answer.rows).toHaveLength(5000);
    expect(answer.rows[0]!.day).toBe('2000-01-01');
    expect(answer.total).toMatchObject({ calls: 5001, input_tokens: 5001, output_tokens: 10002 });
    expect((await report(null, '?group_by=day')).truncated).toBe(false);
    await server.pool.query(`DELETE FROM svc_model_calls WHERE created_at < '2014-01-01'`);
  });

  it('refuses a range that ends before it starts, and group keys it does not know', async () => {
    expect((await asAdmin('/usage?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z')).status).toBe(400);
    expect((await asAdmin('/usage?group_by=day,colour')).status).toBe(400);
    expect((await asAdmin(`/usage?project_id=${DEFAULT_PROJECT_ID}&org_id=${second.org}`)).status).toBe(400);
    const answer = await report(null);
    expect(Date.parse(answer.to) - Date.parse(answer.from)).toBe(30 * 24 * 3600_000);
    expect(answer.rows).toEqual([]);
  });
});
