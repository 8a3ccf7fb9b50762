import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src-server/contracts/assets';
import type { Dataset, DatasetDetail, DatasetItem } from '../../src-server/contracts/datasets';
import type { Experiment, ExperimentComparison, ExperimentSummary } from '../../src-server/contracts/experiments';
import type { RunAccepted, RunDetail, Thread } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { summaryCommand, toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { threePeople } from '../helpers/sessions';
import { until } from '../helpers/until';

/**
 * Datasets and experiments (docs/compare.md#datasets-and-experiments): items copied from runs of the shipped
 * change-review agent in a real folder, experiments that run them on two models of the Ollama stand-in, scored by
 * checks and by a judge model of the stand-in, and compared item by item. Real PostgreSQL, the server in this process.
 */
const SECRET = 'a-session-secret-for-the-experiment-tests-0123';
const API_TOKEN = 'experiment-test-admin-token-0123456789';
/** Prices per million tokens, so that an experiment's cost is a figure to check. */
const PRICES = {
  'fake-model': { input_per_mtok: 1, output_per_mtok: 2 },
  'llama3.2': { input_per_mtok: 3, output_per_mtok: 4 },
  judge: { input_per_mtok: 10, output_per_mtok: 10 },
};

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let catalog: string;
let project: string;

const changeReview = JSON.parse(
  fs.readFileSync(
    path.join(import.meta.dirname, '..', '..', 'generated', 'manifests', 'agents', 'change-review.json'),
    'utf8',
  ),
) as Manifest;

beforeAll(async () => {
  catalog = await writeFixtureCatalog([changeReview, toolAgent, summaryCommand]);
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: catalog,
    MODEL_PRICES: JSON.stringify(PRICES),
  });
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
});
beforeEach(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'experiments-'));
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\nA demo project.\n');
  ctx.model.models = ['fake-model', 'llama3.2', 'judge'];
});
afterEach(() => fs.rmSync(project, { recursive: true, force: true }));

async function json<T>(response: Response, status: number): Promise<T> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  return JSON.parse(body) as T;
}

const as = (token?: string) => (token ? { headers: { authorization: `Bearer ${token}` } } : {});
const post = (url: string, body: object, token?: string) =>
  server.request(url, { method: 'POST', json: body, ...as(token) });

async function settled(runId: string): Promise<RunDetail> {
  return until(async () => {
    const run = await json<RunDetail>(await server.request(`/runs/${runId}/wait?timeout_s=10`), 200);
    return run.status === 'running' || run.status === 'queued' ? undefined : run;
  });
}

/** A change-review run in the test's folder that reads the README, is approved and publishes its review. */
async function reviewRun(message: string): Promise<RunDetail> {
  ctx.model.toolTurns = [[{ name: 'project__read_file', arguments: { path: 'README.md' } }]];
  const started = await json<RunAccepted>(
    await post('/agents/change-review/runs', { message, project_path: project }),
    202,
  );
  expect((await settled(started.run_id)).status).toBe('waiting_approval');
  await json(await post(`/threads/${started.thread_id}/gates/gate/approve`, { reason: 'fine' }), 202);
  const done = await settled(started.run_id);
  expect(done.status).toBe('completed');
  return done;
}

/** The experiment once it has completed. */
async function completed(id: string, token?: string): Promise<Experiment> {
  return until(async () => {
    const experiment = await json<Experiment>(await server.request(`/experiments/${id}`, as(token)), 200);
    return experiment.status === 'completed' ? experiment : undefined;
  }, 60_000);
}

const reviews = () =>
  fs.existsSync(path.join(project, 'reviews')) ? fs.readdirSync(path.join(project, 'reviews')).sort() : [];

describe('a dataset of three runs, and experiments on two models', () => {
  it('scores each item, totals them, stores the judge’s verdicts, and names the item that flips', async () => {
    ctx.model.reply(['approve\n', 'The change ', 'looks right.']);
    const runs = [];
    for (const message of ['Review the README', 'Review the retry', 'Review the logging']) {
      runs.push(await reviewRun(message));
    }
    const published = reviews();
    expect(published).toHaveLength(3);

    const dataset = await json<Dataset>(
      await post(`/projects/${DEFAULT_PROJECT_ID}/datasets`, { name: 'reviews', description: 'three reviews' }),
      201,
    );
    const items: DatasetItem[] = [];
    for (const run of runs)
      items.push(await json<DatasetItem>(await post(`/datasets/${dataset.id}/items`, { run_id: run.id }), 201));
    // Each item is a copy of its run: its input, folder, final output as the expected one, and its record.
    expect(items.map((i) => [i.position, i.message, i.source_run_id])).toEqual(
      runs.map((r, i) => [i + 1, r.message, r.id]),
    );
    for (const [i, item] of items.entries()) {
      expect(item).toMatchObject({ project_path: project, expected: runs[i]!.output, checks: [] });
      // The README read and the publish step's write; the approval at the gate.
      expect(item.recorded).toEqual({ tool_calls: 2, decisions: 1 });
    }
    // The second item checks its own wording: the model that words it otherwise fails it.
    const edited = await json<DatasetItem>(
      await server.request(`/datasets/${dataset.id}/items/${items[1]!.id}`, {
        method: 'PATCH',
        json: { checks: [{ kind: 'contains', text: 'looks right' }] },
      }),
      200,
    );
    expect(edited.checks).toEqual([{ kind: 'contains', text: 'looks right' }]);
    const detail = await json<DatasetDetail>(await server.request(`/datasets/${dataset.id}`), 200);
    expect(detail).toMatchObject({ item_count: 3, name: 'reviews' });

    const checks = [
      { kind: 'label', label: 'approve', phase: 'analysis' },
      { kind: 'not_contains', text: 'TODO' },
    ];
    // The judge answers in its own words; only the first experiment asks it.
    ctx.model.repliesByModel = { judge: ['PASS\n', 'It reviews ', 'the change.'] };
    const first = await json<ExperimentSummary>(
      await post(`/datasets/${dataset.id}/experiments`, {
        agent: 'change-review',
        model: 'fake-model',
        checks: [...checks, { kind: 'judge', name: 'judge', model: 'judge', rubric: 'It reviews the change.' }],
      }),
      202,
    );
    expect(first).toMatchObject({ status: 'running', progress: { done: 0, total: 3 }, model: 'fake-model' });
    const a = await completed(first.id);

    ctx.model.repliesByModel = { 'llama3.2': ['approve\n', 'Fine ', 'by me.'] };
    const second = await json<ExperimentSummary>(
      await post(`/datasets/${dataset.id}/experiments`, { agent: 'change-review', model: 'llama3.2', checks }),
      202,
    );
    const b = await completed(second.id);

    // Nothing was written: the experiments' runs never published.
    expect(reviews()).toEqual(published);

    // Per item: the output, the figures, and a score per check, the item's own first.
    expect(a.items.map((i) => [i.position, i.status, i.run_status])).toEqual([
      [1, 'done', 'completed'],
      [2, 'done', 'completed'],
      [3, 'done', 'completed'],
    ]);
    for (const item of [...a.items, ...b.items]) {
      expect(item.input_tokens).toBeGreaterThan(0);
      expect(item.output_tokens).toBeGreaterThan(0);
      expect(item.cost_usd).toBeGreaterThan(0);
      expect(item.run_ms).toBeGreaterThan(0);
      expect(item.first_token_ms).toBeGreaterThanOrEqual(0);
    }
    expect(a.items[1]!.scores.map((s) => [s.check, s.pass])).toEqual([
      ['contains "looks right"', true],
      ['label is "approve" in analysis', true],
      ['does not contain "TODO"', true],
      ['judge', true],
    ]);
    expect(b.items[1]!.scores.map((s) => [s.check, s.pass])).toEqual([
      ['contains "looks right"', false],
      ['label is "approve" in analysis', true],
      ['does not contain "TODO"', true],
    ]);
    expect(b.items[1]!.scores[0]!.reason).toBe('"looks right" not found');
    // The judge's verdict and reason, per item.
    for (const item of a.items) {
      expect(item.scores.find((s) => s.check === 'judge')).toEqual({
        check: 'judge',
        kind: 'judge',
        pass: true,
        reason: 'It reviews the change.',
      });
    }
    // Each item ran as a comparison of its run, on the experiment's model, in a thread of its own.
    const itemRun = await json<RunDetail>(await server.request(`/runs/${b.items[0]!.run_id}`), 200);
    expect(itemRun).toMatchObject({ model: 'llama3.2', comparison_of: runs[0]!.id, message: runs[0]!.message });
    // The judge's calls count: the item's run's cost is its phases' and its judge's.
    const { rows } = await server.pool.query<{ node_id: string; model: string }>(
      `SELECT node_id, model FROM svc_model_calls WHERE run_id = $1 AND node_id = 'judge'`,
      [a.items[0]!.run_id],
    );
    expect(rows).toEqual([{ node_id: 'judge', model: 'judge' }]);

    // Totals: pass rates per check, tokens, cost, timings.
    expect(a.totals.checks.map((c) => [c.check, c.passed, c.scored, c.pass_rate])).toEqual([
      ['label is "approve" in analysis', 3, 3, 1],
      ['does not contain "TODO"', 3, 3, 1],
      ['judge', 3, 3, 1],
      ['contains "looks right"', 1, 1, 1],
    ]);
    expect(b.totals.checks.find((c) => c.check === 'contains "looks right"')).toMatchObject({
      passed: 0,
      pass_rate: 0,
    });
    expect(b.totals.pass_rate).toBeCloseTo(6 / 7, 10);
    expect(a.totals.input_tokens).toBe(a.items.reduce((n, i) => n + i.input_tokens!, 0));
    expect(a.totals.cost_usd).toBeCloseTo(
      a.items.reduce((n, i) => n + i.cost_usd!, 0),
      10,
    );
    expect(a.totals.run_ms.median).toBeGreaterThan(0);
    expect(a.totals.run_ms.p95).toBeGreaterThanOrEqual(a.totals.run_ms.median!);
    expect(a.totals.first_token_ms.median).not.toBeNull();

    // The two compared: the second item flips from pass to fail, and no other.
    const compared = await json<ExperimentComparison>(
      await server.request(`/experiments/${a.id}/comparison/${b.id}`),
      200,
    );
    expect(compared.flips).toEqual({ pass_to_fail: 1, fail_to_pass: 0 });
    expect(compared.items.filter((i) => i.flipped).map((i) => [i.item_id, i.message])).toEqual([
      [items[1]!.id, 'Review the retry'],
    ]);
    expect(compared.items[1]!.checks.find((c) => c.flip)).toEqual({
      check: 'contains "looks right"',
      base: true,
      other: false,
      flip: 'pass_to_fail',
    });
    const listed = await json<{ experiments: ExperimentSummary[] }>(
      await server.request(`/datasets/${dataset.id}/experiments`),
      200,
    );
    expect(listed.experiments.map((e) => e.id)).toEqual([b.id, a.id]);

    // The experiments' threads stay out of the thread list.
    const threads = await json<{ items: Thread[] }>(await server.request('/threads?limit=100'), 200);
    const itemThreads = new Set(
      await Promise.all(
        [...a.items, ...b.items].map(
          async (i) => (await json<RunDetail>(await server.request(`/runs/${i.run_id}`), 200)).thread_id,
        ),
      ),
    );
    expect(threads.items.filter((t) => itemThreads.has(t.id))).toEqual([]);

    // The items outlive their runs: retention's removal of the runs leaves the dataset whole.
    await server.pool.query(`DELETE FROM svc_runs WHERE id = ANY($1::uuid[])`, [runs.map((r) => r.id)]);
    const kept = await json<DatasetDetail>(await server.request(`/datasets/${dataset.id}`), 200);
    expect(kept.items.map((i) => [i.message, i.expected, i.recorded])).toEqual(
      items.map((i) => [i.message, i.expected, { tool_calls: 2, decisions: 1 }]),
    );
  });
});

describe('an item typed by hand', () => {
  it('acts on nothing, and an experiment scores it at a gate nobody decided, ending its run there', async () => {
    const dataset = await json<Dataset>(await post(`/projects/${DEFAULT_PROJECT_ID}/datasets`, { name: 'typed' }), 201);
    await json(
      await post(`/datasets/${dataset.id}/items`, {
        message: 'Review the README',
        project_path: project,
        expected: 'approve',
        checks: [{ kind: 'regex', pattern: '^approve', flags: 'i' }],
      }),
      201,
    );
    ctx.model.toolTurns = [[{ name: 'project__write_file', arguments: { path: 'notes.md', content: 'x' } }]];
    ctx.model.reply(['approve\n', 'Ship it.']);
    // tool-review asks a person before a write: typed by hand, the item has no answer to give it.
    const started = await json<ExperimentSummary>(
      await post(`/datasets/${dataset.id}/experiments`, { agent: 'tool-review', model: 'fake-model' }),
      202,
    );
    const done = await completed(started.id);
    expect(done.items[0]).toMatchObject({
      status: 'done',
      run_status: 'stopped',
      output: 'approve\nShip it.',
      scores: [{ check: 'matches /^approve/i', pass: true }],
    });
    // The write was not run, and the run waits for nobody.
    expect(fs.existsSync(path.join(project, 'notes.md'))).toBe(false);
    const run = await json<RunDetail>(await server.request(`/runs/${done.items[0]!.run_id}`), 200);
    expect(run.status).toBe('cancelled');
    const { rows } = await server.pool.query(`SELECT replay FROM svc_tool_calls WHERE run_id = $1`, [run.id]);
    expect(rows).toEqual([{ replay: 'not_run' }]);
  });

  it('is refused without a message or a run, and with both', async () => {
    const dataset = await json<Dataset>(await post(`/projects/${DEFAULT_PROJECT_ID}/datasets`, { name: 'bad' }), 201);
    expect(await json(await post(`/datasets/${dataset.id}/items`, {}), 400)).toMatchObject({
      error: {
        code: 'invalid_request',
        message: 'invalid request body: give run_id (a run to copy) or message (an item typed by hand)',
      },
    });
    const empty = await post(`/datasets/${dataset.id}/experiments`, { agent: 'change-review', model: 'fake-model' });
    expect(await json(empty, 400)).toMatchObject({
      error: { message: `dataset ${dataset.id} has no items: add some before running an experiment` },
    });
    const badRegex = await post(`/datasets/${dataset.id}/items`, {
      message: 'x',
      checks: [{ kind: 'regex', pattern: '(' }],
    });
    expect(badRegex.status).toBe(400);
  });
});

describe('who may use datasets and experiments', () => {
  it('a viewer reads but cannot start an experiment (403); another tenant gets 404', async () => {
    const { ann, vera, mallory } = await threePeople(server.pool, SECRET, DEFAULT_PROJECT_ID);
    const dataset = await json<Dataset>(
      await post(`/projects/${DEFAULT_PROJECT_ID}/datasets`, { name: 'roles' }, ann),
      201,
    );
    await json(await post(`/datasets/${dataset.id}/items`, { message: 'Say hello' }, ann), 201);
    ctx.model.reply(['hello']);

    const byViewer = await post(
      `/datasets/${dataset.id}/experiments`,
      { agent: 'change-review', model: 'fake-model' },
      vera,
    );
    expect(await json(byViewer, 403)).toMatchObject({ error: { code: 'forbidden' } });
    expect((await post(`/datasets/${dataset.id}/items`, { message: 'more' }, vera)).status).toBe(403);
    expect((await server.request(`/datasets/${dataset.id}`, as(vera))).status).toBe(200);

    for (const url of [`/datasets/${dataset.id}`, `/datasets/${dataset.id}/experiments`]) {
      const hidden = await server.request(url, as(mallory));
      expect(hidden.status, url).toBe(404);
    }
    const byStranger = await post(
      `/datasets/${dataset.id}/experiments`,
      { agent: 'change-review', model: 'fake-model' },
      mallory,
    );
    expect(byStranger.status).toBe(404);
    expect((await server.request(`/projects/${DEFAULT_PROJECT_ID}/datasets`, as(mallory))).status).toBe(404);

    const started = await json<ExperimentSummary>(
      await post(`/datasets/${dataset.id}/experiments`, { agent: 'change-review', model: 'fake-model' }, ann),
      202,
    );
    // A viewer reads the experiment, without its spend; another tenant does not see it.
    const read = await json<Experiment>(await server.request(`/experiments/${started.id}`, as(vera)), 200);
    expect(read.totals.cost_usd).toBeNull();
    expect(read.totals.input_tokens).toBeNull();
    expect((await server.request(`/experiments/${started.id}`, as(mallory))).status).toBe(404);
    const mine = await completed(started.id, ann);
    expect(mine.totals.input_tokens).toBeGreaterThan(0);
  });
});

describe('cancelling an experiment', () => {
  it('fails the items not yet scored, stops their runs, keeps what was scored; only a member may', async () => {
    const { vera, mallory } = await threePeople(server.pool, SECRET, DEFAULT_PROJECT_ID);
    const dataset = await json<Dataset>(await post(`/projects/${DEFAULT_PROJECT_ID}/datasets`, { name: 'long' }), 201);
    for (const n of [1, 2, 3, 4, 5])
      await json(await post(`/datasets/${dataset.id}/items`, { message: `item ${n}` }), 201);
    // Slow answers: the experiment is still running when it is cancelled.
    ctx.model.reply(
      Array.from({ length: 200 }, (_, i) => `word${i} `),
      20,
    );
    const started = await json<ExperimentSummary>(
      await post(`/datasets/${dataset.id}/experiments`, { agent: 'summary', model: 'fake-model' }),
      202,
    );
    const going = await until(async () => {
      const e = await json<Experiment>(await server.request(`/experiments/${started.id}`), 200);
      return e.items.filter((i) => i.status === 'running').length === 3 ? e : undefined;
    });
    // Three at a time: the other two wait their turn.
    expect(going.items.filter((i) => i.status === 'pending')).toHaveLength(2);

    expect((await post(`/experiments/${started.id}/cancel`, {}, vera)).status).toBe(403);
    expect((await post(`/experiments/${started.id}/cancel`, {}, mallory)).status).toBe(404);
    const cancelled = await json<Experiment>(await post(`/experiments/${started.id}/cancel`, {}), 200);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.finished_at).not.toBeNull();
    for (const item of cancelled.items) {
      expect(item).toMatchObject({ status: 'failed', error: 'the experiment was cancelled' });
    }
    // Its runs stop, and no other starts.
    const runIds = going.items.filter((i) => i.run_id).map((i) => i.run_id!);
    for (const runId of runIds) expect((await settled(runId)).status).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 1500));
    const after = await json<Experiment>(await server.request(`/experiments/${started.id}`), 200);
    expect(after.items.filter((i) => i.run_id).map((i) => i.run_id)).toEqual(runIds);
    expect(await json(await post(`/experiments/${started.id}/cancel`, {}), 409)).toMatchObject({
      error: { message: `experiment ${started.id} is cancelled: only a running experiment can be cancelled` },
    });
  });
});
