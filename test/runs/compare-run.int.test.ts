import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src-server/contracts/assets';
import type { Comparison } from '../../src-server/contracts/comparisons';
import type { RunAccepted, RunDetail, Thread } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { threePeople } from '../helpers/sessions';
import { until } from '../helpers/until';

/**
 * Comparing a run (docs/compare.md): its input again on another model, in a thread of its own, acting on nothing.
 * Real PostgreSQL, the server in this process, the shipped change-review agent on a real folder, a real MCP server
 * over stdio (the fixture agent `tool-review`), and the Ollama stand-in answering as each model.
 */
const SECRET = 'a-session-secret-for-the-compare-tests-0123456';
const API_TOKEN = 'compare-test-admin-token-0123456789';

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let catalog: string;
let project: string;

/** The shipped change-review agent, as the asset build wrote it. */
const changeReview = JSON.parse(
  fs.readFileSync(
    path.join(import.meta.dirname, '..', '..', 'generated', 'manifests', 'agents', 'change-review.json'),
    'utf8',
  ),
) as Manifest;

beforeAll(async () => {
  catalog = await writeFixtureCatalog([changeReview, toolAgent]);
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: catalog,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  });
  // Every gate and finished run of the project goes to a webhook: a comparison must send none.
  const hook = await server.request('/webhooks', {
    method: 'POST',
    json: {
      url: 'http://127.0.0.1:9/hook',
      events: ['gate.waiting', 'gate.decided', 'run.completed', 'run.failed'],
      project_id: DEFAULT_PROJECT_ID,
    },
  });
  expect(hook.status).toBe(201);
  // And every stop goes to its deciders by mail: a comparison's must not.
  const mail = await server.request(`/orgs/${DEFAULT_ORG_ID}/email`, {
    method: 'PUT',
    json: { recipients: 'deciders' },
  });
  expect(mail.status).toBe(200);
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
});
beforeEach(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'compare-'));
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\nA demo project.\n');
});
afterEach(() => fs.rmSync(project, { recursive: true, force: true }));

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

async function json<T>(response: Response, status: number): Promise<T> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  return JSON.parse(body) as T;
}

/** A run of the agent in the test's folder (`inFolder` false: in none), as the admin. */
async function startRun(agent: string, message: string, inFolder = true): Promise<RunAccepted> {
  const started = server.request(`/agents/${agent}/runs`, {
    method: 'POST',
    json: { message, ...(inFolder && { project_path: project }) },
  });
  return json<RunAccepted>(await started, 202);
}

/** The run once it ends or stops for a person. */
async function settled(runId: string): Promise<RunDetail> {
  return until(async () => {
    const run = await json<RunDetail>(await server.request(`/runs/${runId}/wait?timeout_s=10`), 200);
    return run.status === 'running' || run.status === 'queued' ? undefined : run;
  });
}

const compare = (runId: string, body: object, token?: string) =>
  server.request(`/runs/${runId}/compare`, {
    method: 'POST',
    json: body,
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });

/** Webhook deliveries written for a run (whatever became of them). */
async function deliveriesOf(runId: string): Promise<number> {
  const { rows } = await server.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM svc_webhook_deliveries WHERE payload LIKE '%' || $1 || '%'`,
    [runId],
  );
  return rows[0]!.n;
}

/** Deliveries of a run's stops queued for Slack or mail. */
async function stopDeliveriesOf(runId: string): Promise<number> {
  const { rows } = await server.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM svc_stop_deliveries WHERE run_id = $1`,
    [runId],
  );
  return rows[0]!.n;
}

const reviews = () =>
  fs.existsSync(path.join(project, 'reviews')) ? fs.readdirSync(path.join(project, 'reviews')) : [];

describe('a run of change-review compared on another model', () => {
  it('gets the same input, acts on nothing, takes the gate’s decision, and reads beside the original', async () => {
    // The original, on fake-model: it reads the README, reviews, is approved and publishes the review.
    ctx.model.toolTurns = [[call('project__read_file', { path: 'README.md' })]];
    ctx.model.reply(['approve\n', 'The change ', 'looks right.']);
    const original = await startRun('change-review', 'Review the README change');
    expect((await settled(original.run_id)).status).toBe('waiting_approval');
    const approved = await server.request(`/threads/${original.thread_id}/gates/gate/approve`, {
      method: 'POST',
      json: { reason: 'fine' },
    });
    expect(approved.status).toBe(202);
    expect((await settled(original.run_id)).status).toBe('completed');
    expect(reviews()).toHaveLength(1);
    const published = fs.readFileSync(path.join(project, 'reviews', reviews()[0]!), 'utf8');

    // The comparison, on llama3.2, which reads the README the same way, asks for a search the original never made,
    // and tries to write a file.
    ctx.model.toolTurns = [
      [
        call('project__read_file', { path: 'README.md' }),
        call('project__write_file', { path: 'reviews/mine.md', content: 'overwritten' }),
      ],
      [call('project__search_files', { pattern: 'Demo' })],
    ];
    ctx.model.reply(['request-changes\n', 'Please ', 'add tests.']);
    const sentBefore = ctx.model.requests.length;
    const started = await json<RunAccepted>(await compare(original.run_id, { model: 'llama3.2' }), 202);
    expect(started.thread_id).not.toBe(original.thread_id);
    const done = await settled(started.run_id);
    expect(done).toMatchObject({ status: 'completed', comparison_of: original.run_id, model: 'llama3.2' });
    const thread = await json<Thread>(await server.request(`/threads/${started.thread_id}`), 200);
    expect(thread).toMatchObject({ agent: 'change-review', comparison_of: original.run_id });

    // The same input reached the other model.
    const sent = ctx.model.requests.slice(sentBefore);
    expect(sent.length).toBeGreaterThan(0);
    for (const body of sent) {
      expect(body.model).toBe('llama3.2');
      expect(JSON.stringify(body.messages)).toContain('Review the README change');
    }
    // Nothing was written: no second review, no file of the model's, the first review as it was.
    expect(reviews()).toEqual([path.basename(reviews()[0]!)]);
    expect(fs.readFileSync(path.join(project, 'reviews', reviews()[0]!), 'utf8')).toBe(published);
    const output = done.nodes.find((n) => n.node_id === 'output')!;
    expect(output.warnings).toEqual([
      {
        code: 'not_published',
        message: 'the approved analysis was not written with project.write_file: a comparison never publishes',
      },
    ]);
    // No webhook heard of the comparison; the original's gate and end went out.
    expect(await deliveriesOf(original.run_id)).toBeGreaterThanOrEqual(3);
    expect(await deliveriesOf(started.run_id)).toBe(0);
    expect(await stopDeliveriesOf(original.run_id)).toBe(1);
    expect(await stopDeliveriesOf(started.run_id)).toBe(0);

    const side = await json<Comparison>(await server.request(`/runs/${started.run_id}/comparison`), 200);
    expect(side.original).toMatchObject({ run_id: original.run_id, model: 'fake-model', status: 'completed' });
    expect(side.comparison).toMatchObject({ run_id: started.run_id, model: 'llama3.2', status: 'completed' });
    const recordedAnswer = side.original.tool_calls.find((c) => c.tool === 'project.read_file')!;
    expect(recordedAnswer).toMatchObject({ replay: null, is_error: false });
    expect(recordedAnswer.result).toContain('A demo project.');
    expect(side.comparison.tool_calls.map((c) => [c.tool, c.replay, c.is_error])).toEqual([
      ['project.read_file', 'recorded', false],
      // Not offered to the phase: refused as in any run, under the name the model gave.
      ['project__write_file', null, true],
      ['project.search_files', 'ran', false],
    ]);
    expect(side.comparison.tool_calls[0]!.result).toBe(recordedAnswer.result);
    expect(side.comparison.decisions).toEqual([
      {
        gate: 'gate',
        kind: 'approve',
        reason: 'fine',
        deciders: ['api-token'],
        in_original: { run_id: original.run_id, edited: false },
      },
    ]);
    expect(side.original.decisions).toMatchObject([{ gate: 'gate', kind: 'approve', in_original: null }]);
    const analysis = (s: Comparison['original']) => s.phases.find((p) => p.node === 'analysis')!;
    expect(analysis(side.original).output).toBe('approve\nThe change looks right.');
    expect(analysis(side.comparison).output).toBe('request-changes\nPlease add tests.');
    for (const s of [side.original, side.comparison]) {
      expect(analysis(s).output_tokens).toBeGreaterThan(0);
      expect(analysis(s).duration_ms).toBeGreaterThanOrEqual(0);
      expect(s.first_token_ms).toBeGreaterThanOrEqual(0);
      expect(s.run_ms).toBeGreaterThan(0);
      expect(s.usage!.output_tokens).toBeGreaterThan(0);
      // The gate is a person's wait, not a phase.
      expect(s.phases.map((p) => p.node)).not.toContain('gate');
    }
  });
});

describe('a comparison of a run whose tool calls asked a person', () => {
  it('gives a recorded call its answer and runs no other write; a rejection at the gate is taken too', async () => {
    const file = path.join(project, 'effects.log');
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'one' })]];
    const original = await startRun('tool-review', 'log it');
    const waiting = await settled(original.run_id);
    const callId = waiting.pending_gate!.tool_call!.call_id;
    const decided = await server.request(`/threads/${original.thread_id}/tool-calls/${callId}/approve`, {
      method: 'POST',
      json: {},
    });
    expect(decided.status).toBe(202);
    expect((await settled(original.run_id)).status).toBe('waiting_approval');
    const rejected = await server.request(`/threads/${original.thread_id}/gates/gate/reject`, {
      method: 'POST',
      json: { reason: 'not now' },
    });
    expect(rejected.status).toBe(202);
    expect((await settled(original.run_id)).status).toBe('rejected');
    expect(fs.readFileSync(file, 'utf8')).toBe('one\n');

    ctx.model.toolTurns = [
      [
        call('mock__append', { file, line: 'one' }),
        call('mock__append', { file, line: 'two' }),
        call('project__write_file', { path: 'notes.md', content: 'x' }),
      ],
    ];
    const started = await json<RunAccepted>(await compare(original.run_id, {}), 202);
    const done = await settled(started.run_id);
    // The gate took the original's rejection: the comparison ends as it did, without stopping for anyone.
    expect(done.status).toBe('rejected');
    expect(fs.readFileSync(file, 'utf8')).toBe('one\n');
    expect(fs.existsSync(path.join(project, 'notes.md'))).toBe(false);

    const side = await json<Comparison>(await server.request(`/runs/${started.run_id}/comparison`), 200);
    expect(side.comparison.tool_calls.map((c) => [c.tool, c.policy, c.replay])).toEqual([
      ['mock.append', 'ask', 'recorded'],
      ['mock.append', 'ask', 'not_run'],
      ['project.write_file', 'ask', 'not_run'],
    ]);
    expect(side.comparison.tool_calls[1]).toMatchObject({
      is_error: true,
      result: expect.stringMatching(/^Not run: this is a comparison, which acts on nothing\./),
    });
    expect(side.comparison.decisions).toEqual([
      {
        gate: 'gate',
        kind: 'reject',
        reason: 'not now',
        deciders: ['api-token'],
        in_original: { run_id: original.run_id, edited: false },
      },
    ]);
    // Nothing of the comparison asked anyone.
    const { rows } = await server.pool.query(`SELECT 1 FROM svc_gate_decisions WHERE run_id = $1`, [started.run_id]);
    expect(rows).toEqual([]);
  });

  it('an edit at the original’s gate is taken as an approval of the comparison’s own text, and said so', async () => {
    ctx.model.reply(['first ', 'draft']);
    const original = await startRun('tool-review', 'write a note');
    expect((await settled(original.run_id)).status).toBe('waiting_approval');
    const edited = await server.request(`/threads/${original.thread_id}/gates/gate/approve`, {
      method: 'POST',
      json: { edits: { analysis: 'a better draft' } },
    });
    expect(edited.status).toBe(202);
    expect((await settled(original.run_id)).status).toBe('completed');
    // The original's last phase read the edited text.
    const prompt = (model: string) => JSON.stringify(ctx.model.requests.filter((r) => r.model === model).at(-1));
    expect(prompt('fake-model')).toContain('a better draft');

    ctx.model.reply(['second ', 'draft']);
    const started = await json<RunAccepted>(await compare(original.run_id, { model: 'llama3.2' }), 202);
    const done = await settled(started.run_id);
    expect(done.status).toBe('completed');
    // The comparison's last phase read its own text, approved as the original's was.
    expect(prompt('llama3.2')).toContain('second draft');
    expect(prompt('llama3.2')).not.toContain('a better draft');
    const side = await json<Comparison>(await server.request(`/runs/${started.run_id}/comparison`), 200);
    expect(side.original.decisions).toMatchObject([{ kind: 'edit' }]);
    expect(side.comparison.decisions).toMatchObject([
      { kind: 'approve', in_original: { run_id: original.run_id, edited: true } },
    ]);
  });
});

describe('who may compare, and what', () => {
  it('a member compares; a viewer may not (403); another tenant sees nothing (404); bad versions and busy runs are refused', async () => {
    const { ann, vera, mallory } = await threePeople(server.pool, SECRET, DEFAULT_PROJECT_ID);
    ctx.model.reply(['a ', 'review']);
    const original = await startRun('tool-review', 'a waiting run', false);
    expect((await settled(original.run_id)).status).toBe('waiting_approval');

    const refusedViewer = await compare(original.run_id, {}, vera);
    expect(refusedViewer.status).toBe(403);
    const hidden = await compare(original.run_id, {}, mallory);
    expect(hidden.status).toBe(404);
    expect((await hidden.json()).error.code).toBe('not_found');
    const badVersion = await compare(original.run_id, { agent_version: '999' }, ann);
    expect(await json(badVersion, 400)).toMatchObject({
      error: {
        code: 'invalid_request',
        message: 'invalid request body: agent_version: "tool-review" has no version "999"',
      },
    });
    const notAComparison = await server.request(`/runs/${original.run_id}/comparison`);
    expect(notAComparison.status).toBe(404);

    // A member compares a run that waits at its gate: the comparison reaches a gate its original never got past,
    // and stops there for a person, as any run.
    const started = await json<RunAccepted>(await compare(original.run_id, {}, ann), 202);
    const stopped = await settled(started.run_id);
    expect(stopped).toMatchObject({ status: 'waiting_approval', pending_gate: { node: 'gate' } });
    expect(await deliveriesOf(started.run_id)).toBe(0);
    expect(await stopDeliveriesOf(started.run_id)).toBe(0);
    const viewerReads = await server.request(`/runs/${started.run_id}/comparison`, {
      headers: { authorization: `Bearer ${vera}` },
    });
    expect(viewerReads.status).toBe(200);
    const strangerReads = await server.request(`/runs/${started.run_id}/comparison`, {
      headers: { authorization: `Bearer ${mallory}` },
    });
    expect(strangerReads.status).toBe(404);

    // A folder the administrator named is checked with the member's own rights, as a new run's would be.
    const inFolder = await startRun('tool-review', 'a run in a folder');
    await settled(inFolder.run_id);
    expect(await json(await compare(inFolder.run_id, {}, ann), 400)).toMatchObject({
      error: {
        message: expect.stringMatching(
          /^thread \S+ works in a folder this run may not use: local project paths are disabled/,
        ),
      },
    });

    // A run still running is compared once it has ended or stops.
    ctx.model.reply(['slow ', 'answer'], 400);
    const running = await startRun('tool-review', 'a running run', false);
    const busy = await compare(running.run_id, {}, ann);
    expect(await json(busy, 409)).toMatchObject({
      error: { message: `run ${running.run_id} is running: compare it once it has ended or stops for a person` },
    });
    await settled(running.run_id);
  });
});
