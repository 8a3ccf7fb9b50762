import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GateDecisionRecord, RunAccepted, RunDetail, Thread } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import type { ThreadExport } from '../../src-server/contracts/thread-transfer';
import { createTestDatabase, type TestDatabase } from '../helpers/database';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { threePeople } from '../helpers/sessions';
import { readEvents } from '../helpers/sse';

/**
 * A thread exported from one installation and imported into another (docs/http-api.md#export-and-import-of-a-thread):
 * two servers on two databases, the stand-in model, the fixture catalog's review agent.
 */
const SECRET = 'a-session-secret-for-thread-transfer-0123456789';
const ADMIN_TOKEN = 'thread-transfer-admin-token-0123456789';
const AUTH = { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: ADMIN_TOKEN };
const ctx = useIntegrationServer({ server: AUTH });

/** Install B: a database of its own, the same model and catalog. */
let dbB: TestDatabase;
let b: TestServer;
const envB = () => ({ ...AUTH, DATABASE_URL: dbB.url });
/** Install A's people (Vera a viewer, Mallory another organisation's member) and B's (Ann a member). */
let peopleA: Awaited<ReturnType<typeof threePeople>>;
let peopleB: Awaited<ReturnType<typeof threePeople>>;
const as = (token: string, init: RequestInit & { json?: unknown } = {}) => ({
  ...init,
  headers: { authorization: `Bearer ${token}` },
});

/** A's thread: a run approved at its gate, then a second run waiting at it. */
let threadA: string;
let doc: ThreadExport;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** `value` with A's ids written as B's. */
const mapped = <T>(value: T, ids: Map<string, string>): T =>
  JSON.parse(JSON.stringify(value).replace(UUID, (id) => ids.get(id) ?? id)) as T;

const json = async <T>(res: Response | Promise<Response>, status = 200): Promise<T> => {
  const answer = await res;
  const text = await answer.text();
  expect(answer.status, text).toBe(status);
  return JSON.parse(text) as T;
};

async function runToGate(server: TestServer, body: Record<string, unknown>) {
  ctx.model.reply(['Looks', ' fine']);
  const events = await readEvents(await server.request('/graphs/review/run', { method: 'POST', json: body }));
  expect(events.at(-1)!.name).toBe('gate_waiting');
  return events[0]!.data as { run_id: string; thread_id: string };
}

const importInto = (server: TestServer, body: unknown, init: { token?: string; query?: string } = {}) =>
  server.request(`/projects/${DEFAULT_PROJECT_ID}/threads/import${init.query ?? ''}`, {
    method: 'POST',
    json: body,
    ...(init.token ? as(init.token) : {}),
  });

const threadCount = async (server: TestServer) =>
  (await server.pool.query<{ n: number }>(`SELECT count(*)::integer AS n FROM svc_threads`)).rows[0]!.n;

/** Everything A and B show of a thread through the API, run by run, with its event streams. */
async function shown(server: TestServer, threadId: string) {
  const thread = await json<Thread>(server.request(`/threads/${threadId}`));
  const runs = await json<{ id: string }[]>(server.request(`/threads/${threadId}/runs`));
  const details: RunDetail[] = [];
  const streams: unknown[] = [];
  for (const run of runs) {
    details.push(await json<RunDetail>(server.request(`/runs/${run.id}`)));
    streams.push(await readEvents(await server.request(`/runs/${run.id}/stream`)));
  }
  const decisions = await json<GateDecisionRecord[]>(server.request(`/threads/${threadId}/decisions`));
  const checkpoints = await json<unknown[]>(server.request(`/threads/${threadId}/checkpoints`));
  return { thread, runs, details, streams, decisions, checkpoints };
}

/** A decision without what differs by design between the installations: its id, and whether it was imported. */
const decisionOf = ({ id: _id, imported: _imported, ...decision }: GateDecisionRecord) => decision;

beforeAll(async () => {
  dbB = await createTestDatabase();
  b = await ctx.start(envB());
  peopleA = await threePeople(ctx.server.pool, SECRET, DEFAULT_PROJECT_ID);
  peopleB = await threePeople(b.pool, SECRET, DEFAULT_PROJECT_ID);

  const first = await runToGate(ctx.server, { message: 'Review: rename the config loader' });
  threadA = first.thread_id;
  ctx.model.reply(['Published']);
  const approved = await json<RunAccepted>(
    ctx.server.request(`/threads/${threadA}/gates/gate/approve`, { method: 'POST', json: { reason: 'fine' } }),
    202,
  );
  expect((await readEvents(await ctx.server.request(approved.stream_url))).at(-1)!.name).toBe('run_done');
  // A tool call's record, as a phase that calls tools leaves one: its id is made of its run's.
  await ctx.server.pool.query(
    `INSERT INTO svc_tool_calls (id, run_id, node, tool, arguments, arguments_sha256, policy, rerunnable, attempts,
                                 started_at, result, is_error, finished_at)
     VALUES ($1 || ':intake:1:1:0', $1::uuid, 'intake', 'project.read_file', '{"path":"a.md"}', 'abc', 'allow', true, 1,
             now(), 'text', false, now())`,
    [first.run_id],
  );
  await runToGate(ctx.server, { message: 'And the logger?', thread_id: threadA });
  // Any change of a run of B's project would be a delivery: nothing imported may make one.
  await json(
    b.request('/webhooks', {
      method: 'POST',
      json: {
        url: 'https://192.0.2.10/transfer',
        events: ['gate.waiting', 'gate.decided', 'gate.expired', 'run.completed', 'run.failed'],
        project_id: DEFAULT_PROJECT_ID,
      },
    }),
    201,
  );
}, 60_000);

afterAll(async () => {
  await b?.close();
  await dbB?.drop();
});

describe('exporting a thread', () => {
  it('is one document for whoever may read the thread; another organisation reads no such thread', async () => {
    doc = await json<ThreadExport>(ctx.server.request(`/threads/${threadA}/export`, as(peopleA.vera)));
    expect(doc).toMatchObject({
      format: 'agent-workflow-thread',
      version: 1,
      schema_migration: '0018_queue_groups',
      thread: { id: threadA, agent: 'review', imported: null },
    });
    expect(doc.left_out.join(' ')).toContain('model usage');
    expect(doc.runs.map((r) => r.status)).toEqual(['completed', 'waiting_approval']);
    expect(doc.runs[0]!.events.at(-1)!.type).toBe('run_done');
    expect(doc.runs[0]!.nodes.map((n) => n.node_id)).toEqual(['intake', 'analysis', 'gate', 'output']);
    expect(doc.decisions.map((d) => [d.decision, d.run_id])).toEqual([['approve', doc.runs[0]!.id]]);
    expect(doc.checkpoints.checkpoints.length).toBeGreaterThan(5);
    expect(doc.checkpoints.blobs.some((blob) => blob.channel === 'run_id')).toBe(true);

    const refused = await ctx.server.request(`/threads/${threadA}/export`, as(peopleA.mallory));
    expect(refused.status).toBe(404);
  });
});

describe('importing a thread into another installation', () => {
  let kept: Thread;
  let imported: Thread;
  let runIdsB: string[];
  const ids = new Map<string, string>();

  it('refuses what it cannot import with 400 in words, and imports nothing', async () => {
    const before = await threadCount(b);
    const other = await json<{ error: { message: string } }>(
      importInto(b, { ...doc, format: 'something-else' }, { token: peopleB.ann }),
      400,
    );
    expect(other.error.message).toContain('not an export of a thread');
    const newer = await json<{ error: { message: string } }>(
      importInto(b, { ...doc, version: 2 }, { token: peopleB.ann }),
      400,
    );
    expect(newer.error.message).toContain('version 2 of the export format is not one this server imports');
    const stray = { ...doc, decisions: doc.decisions.map((d) => ({ ...d, run_id: crypto.randomUUID() })) };
    const unknownRun = await json<{ error: { message: string } }>(importInto(b, stray, { token: peopleB.ann }), 400);
    expect(unknownRun.error.message).toContain("none of the document's runs");
    // Two events under one id: the database refuses the row, and the transaction takes nothing.
    const twice = structuredClone(doc);
    twice.runs[0]!.events.push(twice.runs[0]!.events[0]!);
    const refused = await json<{ error: { message: string } }>(importInto(b, twice, { token: peopleB.ann }), 400);
    expect(refused.error.message).toMatch(/^the document cannot be imported: .*nothing was imported$/);
    expect((await importInto(b, { nothing: 'here' }, { token: peopleB.ann })).status).toBe(400);
    expect(await threadCount(b)).toBe(before);
  });

  it('keeps the ids for an instance administrator, and answers 409 when they exist; a member may not keep them', async () => {
    const before = await threadCount(b);
    const notAdmin = await importInto(b, doc, { token: peopleB.ann, query: '?keep_ids=true' });
    expect(notAdmin.status).toBe(403);
    expect(await threadCount(b)).toBe(before);

    kept = await json<Thread>(importInto(b, doc, { query: '?keep_ids=true' }), 201);
    expect(kept.id).toBe(threadA);
    const keptRuns = await json<{ id: string }[]>(b.request(`/threads/${threadA}/runs`));
    expect(keptRuns.map((r) => r.id).sort()).toEqual(doc.runs.map((r) => r.id).sort());
    const keptDecisions = await json<GateDecisionRecord[]>(b.request(`/threads/${threadA}/decisions`));
    expect(keptDecisions.map((d) => [d.id, d.imported])).toEqual(doc.decisions.map((d) => [d.id, true]));

    const again = await json<{ error: { message: string } }>(importInto(b, doc, { query: '?keep_ids=true' }), 409);
    expect(again.error.message).toContain(`thread ${threadA}`);
    expect(again.error.message).toContain('nothing was imported');
    expect(await threadCount(b)).toBe(before + 1);
  });

  it('imports it as a new thread of the project under new ids, reading the same as on the installation it came from', async () => {
    imported = await json<Thread>(importInto(b, doc, { token: peopleB.ann }), 201);
    expect(imported.id).not.toBe(threadA);
    expect(imported).toMatchObject({
      project_id: DEFAULT_PROJECT_ID,
      project_path: null,
      imported: { from_thread_id: threadA, exported_at: doc.exported_at },
    });
    expect(Date.parse(imported.imported!.imported_at)).toBeGreaterThan(Date.parse(doc.exported_at));
    // The import is in B's audit log: who brought which thread from where.
    const audit = await json<{ events: { action: string; actor: { name: string }; after: unknown }[] }>(
      b.request(`/audit?project_id=${DEFAULT_PROJECT_ID}&action=thread.imported`),
    );
    expect(audit.events[0]).toMatchObject({
      action: 'thread.imported',
      actor: { name: 'Ann' },
      after: { thread_id: imported.id, from_thread_id: threadA, runs: doc.runs.length, kept_ids: false },
    });

    const inA = await shown(ctx.server, threadA);
    const inB = await shown(b, imported.id);
    runIdsB = inB.runs.map((r) => r.id);
    ids.set(threadA, imported.id);
    inA.runs.forEach((run, i) => ids.set(run.id, runIdsB[i]!));
    // Every id is new: none of B's is A's.
    for (const id of [imported.id, ...runIdsB]) expect(inA.runs.map((r) => r.id).concat(threadA)).not.toContain(id);

    const { imported: _a, ...threadFieldsA } = inA.thread;
    const { imported: _b, ...threadFieldsB } = inB.thread;
    expect(threadFieldsB).toEqual(mapped(threadFieldsA, ids));
    expect(inB.runs).toEqual(mapped(inA.runs, ids));
    const detail = ({ usage: _usage, decisions, ...rest }: RunDetail) => ({
      ...rest,
      decisions: decisions.map(decisionOf),
    });
    expect(inB.details.map(detail)).toEqual(mapped(inA.details.map(detail), ids));
    expect(inB.details.map((d) => d.status)).toEqual(['waiting_approval', 'completed']);
    expect(inB.streams).toEqual(mapped(inA.streams, ids));
    expect(inB.decisions.map(decisionOf)).toEqual(mapped(inA.decisions.map(decisionOf), ids));
    expect(inB.checkpoints).toEqual(mapped(inA.checkpoints, ids));
    expect(inB.checkpoints.length).toBeGreaterThan(5);

    // Decisions of an imported thread say so; the installation's own say not.
    expect(inA.decisions.map((d) => d.imported)).toEqual([false]);
    expect(inB.decisions.map((d) => d.imported)).toEqual([true]);
    // Decision ids are new too, after the ones kept above.
    expect(Number(inB.decisions[0]!.id)).toBeGreaterThan(Number(doc.decisions.at(-1)!.id));
    // The tool call's record, under its run's new id.
    const calls = await b.pool.query(`SELECT id, run_id, tool, result FROM svc_tool_calls WHERE run_id = $1`, [
      runIdsB[1],
    ]);
    expect(calls.rows).toEqual([
      { id: `${runIdsB[1]}:intake:1:1:0`, run_id: runIdsB[1], tool: 'project.read_file', result: 'text' },
    ]);
  });

  it('takes a document larger than BODY_LIMIT, up to THREAD_IMPORT_LIMIT', async () => {
    const large = { ...doc, thread: { ...doc.thread, metadata: { notes: 'x'.repeat(2_000_000) } } };
    const thread = await json<Thread>(importInto(b, large, { token: peopleB.ann }), 201);
    expect(thread.imported?.from_thread_id).toBe(threadA);
    expect((await b.request(`/threads/${thread.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('starts, resumes, decides, forks and cancels nothing: 409 in words', async () => {
    const [waiting] = runIdsB;
    const words = 'is imported read-only history';
    const refused = async (path: string, body: unknown = {}) => {
      const answer = await json<{ error: { code: string; message: string } }>(
        b.request(path, { method: 'POST', json: body, ...as(peopleB.ann) }),
        409,
      );
      expect(answer.error).toMatchObject({ code: 'conflict' });
      expect(answer.error.message).toContain(words);
    };
    await refused(`/threads/${imported.id}/gates/gate/approve`);
    await refused(`/threads/${imported.id}/gates/gate/reject`);
    const detail = await json<RunDetail>(b.request(`/runs/${waiting}`));
    await refused(`/stops/${detail.stop!.id}/decision`, { decision: 'approve' });
    await refused('/agents/review/runs', { message: 'One more', thread_id: imported.id });
    const checkpoints = await json<{ checkpoint_id: string; next: string[] }[]>(
      b.request(`/threads/${imported.id}/checkpoints`),
    );
    const beforeGate = checkpoints.find((c) => c.next.includes('analysis'))!;
    await refused(`/threads/${imported.id}/checkpoints/${beforeGate.checkpoint_id}/runs`, { message: 'Again' });
    await refused(`/runs/${waiting}/cancel`);
    await refused(`/runs/${runIdsB[1]}/compare`);
    // The kept thread too; and neither's gate is in anyone's inbox.
    await refused(`/threads/${kept.id}/gates/gate/approve`);
    const inbox = await json<{ run_id: string }[]>(b.request('/approvals'));
    expect(inbox).toEqual([]);
    // Nothing of it was sent anywhere.
    expect((await b.pool.query(`SELECT * FROM svc_webhook_deliveries`)).rows).toEqual([]);
    expect((await b.pool.query(`SELECT * FROM svc_stop_deliveries`)).rows).toEqual([]);
  });

  it('is never picked up by the engine: a waiting gate past its expiry, a run running or queued, across a restart', async () => {
    // The same thread with its second run recorded running (an hour ago, its lease lapsed), and queued.
    const variant = (status: 'running' | 'queued') => {
      const copy = structuredClone(doc);
      const run = copy.runs[1]!;
      Object.assign(run, {
        status,
        pending_gate: null,
        gate_waiting_since: null,
        gate_checkpoint_id: null,
        started_at: new Date(Date.now() - 2 * 3600_000).toISOString(),
        queued_at: status === 'queued' ? new Date(Date.now() - 2 * 3600_000).toISOString() : null,
      });
      return copy;
    };
    const running = await json<Thread>(importInto(b, variant('running'), { token: peopleB.ann }), 201);
    const queued = await json<Thread>(importInto(b, variant('queued'), { token: peopleB.ann }), 201);
    const threads = [imported.id, kept.id, running.id, queued.id];
    await b.pool.query(
      `UPDATE svc_runs SET gate_expires_at = now() - interval '1 minute' WHERE thread_id = ANY($1) AND status = 'waiting_approval'`,
      [threads],
    );
    await b.pool.query(
      `UPDATE svc_runs SET lease_until = now() - interval '1 minute' WHERE thread_id = ANY($1) AND status = 'running'`,
      [threads],
    );
    const rows = async () =>
      (
        await b.pool.query(
          `SELECT r.*, (SELECT count(*)::integer FROM svc_run_events e WHERE e.run_id = r.id) AS events,
                  (SELECT count(*)::integer FROM svc_gate_decisions d WHERE d.run_id = r.id) AS decisions
             FROM svc_runs r WHERE r.thread_id = ANY($1) ORDER BY r.id`,
          [threads],
        )
      ).rows;
    const before = await rows();
    expect(before.map((r) => r.status).sort()).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
      'queued',
      'running',
      'waiting_approval',
      'waiting_approval',
    ]);
    await b.close();
    b = await ctx.start(envB());
    await new Promise((resolve) => setTimeout(resolve, 3500));
    expect(await rows()).toEqual(before);
    const detail = await json<RunDetail>(b.request(`/runs/${runIdsB[0]}`));
    expect(detail).toMatchObject({ status: 'waiting_approval', pending_gate: { node: 'gate' } });
    // A reader of a run recorded running has its stored events, and the stream ends there.
    const runningRuns = await json<{ id: string; status: string }[]>(b.request(`/threads/${running.id}/runs`));
    const recorded = runningRuns.find((r) => r.status === 'running')!;
    const events = await readEvents(await b.request(`/runs/${recorded.id}/stream`));
    const last = doc.runs[1]!.events.at(-1)!;
    expect(events.at(-1)!.id).toBe(last.seq_last ?? last.seq);
    expect((await b.pool.query(`SELECT * FROM svc_webhook_deliveries`)).rows).toEqual([]);
  }, 30_000);
});
