import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Checkpoint, RunAccepted } from '../../src-server/contracts/runs';
import { retentionRepository } from '../../src-server/db/retention.repository';
import { CHECKPOINT_SCHEMA } from '../../src-server/db/checkpointer';
import { getLogger } from '../../src-server/log';
import { RETENTION_JOB, RetentionJanitor } from '../../src-server/services/retention-janitor';
import { useIntegrationServer } from '../helpers/integration';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

const SECRET = 'a-session-secret-for-retention-tests-0123456789';
const ctx = useIntegrationServer({
  server: { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: 'retention-tests-admin-token-0123456789' },
});

/** A janitor on the server's database, as another process of the cluster would run it. */
function janitor(owner: string = randomUUID()) {
  return new RetentionJanitor(retentionRepository(ctx.server.pool), {
    owner,
    intervalS: 3600,
    pruneAfterHours: 24,
    log: getLogger('svc.retention'),
  });
}

/** A pass now: the interval's claim is let go first (the server's own janitor took one when it started). */
async function passNow() {
  await ctx.server.pool.query(`DELETE FROM svc_janitor_passes WHERE job = $1`, [RETENTION_JOB]);
  const result = await janitor().pass();
  expect(result.ran).toBe(true);
  return result;
}

/** A project of its own for each test, so that one test's settings never reach another's threads. */
async function newProject(): Promise<string> {
  const create = async (path: string, json: object) =>
    ((await (await ctx.server.request(path, { method: 'POST', json })).json()) as { id: string }).id;
  const org = await create('/orgs', { name: 'Retention org' });
  const team = await create('/teams', { name: 'Retention team', parent_id: org });
  return create('/projects', { name: 'Retention project', parent_id: team });
}

const setRetention = (projectId: string, body: object, token?: string) =>
  ctx.server.request(`/projects/${projectId}/retention`, {
    method: 'PUT',
    json: body,
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });

async function runToGate(projectId: string, extra: object = {}) {
  ctx.model.reply(['Looks', ' fine']);
  const events = await readEvents(
    await ctx.server.request('/graphs/review/run', {
      method: 'POST',
      json: { message: 'Review: rename the config loader', project_id: projectId, ...extra },
    }),
  );
  const start = events[0]!.data as { run_id: string; thread_id: string };
  expect(events.at(-1)!.name).toBe('gate_waiting');
  return { runId: start.run_id, threadId: start.thread_id };
}

/** Approves the thread's waiting gate and follows the run to its end. */
async function approve(threadId: string) {
  ctx.model.reply(['Published']);
  const res = await ctx.server.request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: {} });
  expect(res.status).toBe(202);
  const events = await readEvents(await ctx.server.request(((await res.json()) as RunAccepted).stream_url));
  expect(events.at(-1)!.name).toBe('run_done');
}

async function checkpoints(threadId: string): Promise<Checkpoint[]> {
  const res = await ctx.server.request(`/threads/${threadId}/checkpoints`);
  expect(res.status).toBe(200);
  return (await res.json()) as Checkpoint[];
}

/** A new run from a checkpoint, followed to its gate. */
async function forkToGate(threadId: string, checkpointId: string, message: string) {
  ctx.model.reply(['Another', ' look']);
  const res = await ctx.server.request(`/threads/${threadId}/checkpoints/${checkpointId}/runs`, {
    method: 'POST',
    json: { message },
  });
  expect(res.status).toBe(202);
  const accepted = (await res.json()) as RunAccepted;
  const events = await readEvents(await ctx.server.request(accepted.stream_url));
  expect(events.at(-1)!.name).toBe('gate_waiting');
  return accepted.run_id;
}

/** Makes a thread's runs look as if they ended `hours` ago. */
async function age(threadId: string, hours: number) {
  const pool = ctx.server.pool;
  const ago = `now() - make_interval(hours => ${hours})`;
  await pool.query(`UPDATE svc_runs SET started_at = ${ago}, finished_at = ${ago} WHERE thread_id = $1`, [threadId]);
  await pool.query(`UPDATE svc_threads SET updated_at = ${ago} WHERE id = $1`, [threadId]);
}

/** Rows a thread has in each table retention deletes from. */
async function footprint(threadId: string) {
  const count = async (sql: string) => (await ctx.server.pool.query<{ n: number }>(sql, [threadId])).rows[0]!.n;
  const ofRuns = (table: string) =>
    count(`SELECT count(*)::integer AS n FROM ${table} WHERE run_id IN (SELECT id FROM svc_runs WHERE thread_id = $1)`);
  const cp = (table: string) =>
    count(`SELECT count(*)::integer AS n FROM ${CHECKPOINT_SCHEMA}.${table} WHERE thread_id = $1::text`);
  return {
    threads: await count(`SELECT count(*)::integer AS n FROM svc_threads WHERE id = $1`),
    runs: await count(`SELECT count(*)::integer AS n FROM svc_runs WHERE thread_id = $1`),
    events: await ofRuns('svc_run_events'),
    nodes: await ofRuns('svc_run_nodes'),
    decisions: await count(`SELECT count(*)::integer AS n FROM svc_gate_decisions WHERE thread_id = $1`),
    checkpoints: await cp('checkpoints'),
    blobs: await cp('checkpoint_blobs'),
    writes: await cp('checkpoint_writes'),
  };
}

/**
 * Channel versions the thread's checkpoints name without a blob (a checkpoint that could not be read whole), and
 * blobs no checkpoint names (left behind): both none after a prune.
 */
async function blobIntegrity(threadId: string) {
  const t = `${CHECKPOINT_SCHEMA}`;
  const { rows } = await ctx.server.pool.query<{ missing: number; orphaned: number }>(
    `SELECT
       (SELECT count(*) FROM ${t}.checkpoints c, jsonb_each_text(c.checkpoint -> 'channel_versions') v
         WHERE c.thread_id = $1 AND NOT EXISTS (
           SELECT 1 FROM ${t}.checkpoint_blobs b WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
              AND b.channel = v.key AND b.version = v.value))::integer AS missing,
       (SELECT count(*) FROM ${t}.checkpoint_blobs b WHERE b.thread_id = $1 AND NOT EXISTS (
           SELECT 1 FROM ${t}.checkpoints c, jsonb_each_text(c.checkpoint -> 'channel_versions') v
            WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
              AND v.key = b.channel AND v.value = b.version))::integer AS orphaned`,
    [threadId],
  );
  return rows[0]!;
}

describe('keeping finished threads for a number of days', () => {
  it('deletes an old finished thread with its runs, events, decision records and checkpoints, and keeps a recent one', async () => {
    const project = await newProject();
    expect((await setRetention(project, { keep_finished_threads_days: 30, prune_checkpoints: false })).status).toBe(
      200,
    );
    const old = await runToGate(project);
    await approve(old.threadId);
    const recent = await runToGate(project);
    await approve(recent.threadId);
    await age(old.threadId, 31 * 24);
    await age(recent.threadId, 29 * 24);
    const before = await footprint(old.threadId);
    expect(before).toMatchObject({ threads: 1, runs: 1, decisions: 1 });
    for (const rows of [before.events, before.nodes, before.checkpoints, before.blobs]) expect(rows).toBeGreaterThan(0);

    const result = await passNow();

    expect(result.threadsDeleted).toBe(1);
    expect(await footprint(old.threadId)).toEqual({
      threads: 0,
      runs: 0,
      events: 0,
      nodes: 0,
      decisions: 0,
      checkpoints: 0,
      blobs: 0,
      writes: 0,
    });
    expect((await ctx.server.request(`/threads/${old.threadId}`)).status).toBe(404);
    expect((await ctx.server.request(`/runs/${old.runId}`)).status).toBe(404);
    // The one that ended 29 days ago is whole.
    expect(await footprint(recent.threadId)).toMatchObject({ threads: 1, runs: 1, decisions: 1 });
    expect((await ctx.server.request(`/threads/${recent.threadId}/decisions`)).status).toBe(200);
    expect(ctx.server.logs.join('\n')).toMatch(
      /INFO svc\.retention retention deleted 1 finished thread\(s\) past their project's keep time, with 1 run\(s\), \d+ event\(s\), 1 decision record\(s\)/,
    );
  });

  it('leaves a thread waiting at a gate alone, however old, and the gate can still be approved', async () => {
    const project = await newProject();
    await setRetention(project, { keep_finished_threads_days: 1, prune_checkpoints: true });
    const waiting = await runToGate(project);
    await age(waiting.threadId, 400 * 24);
    const before = await footprint(waiting.threadId);

    await passNow();

    expect(await footprint(waiting.threadId)).toEqual(before);
    await approve(waiting.threadId);
    expect(await footprint(waiting.threadId)).toMatchObject({ threads: 1, runs: 1, decisions: 1 });
  });

  it('leaves a thread that a schedule continues alone, however old', async () => {
    const project = await newProject();
    await setRetention(project, { keep_finished_threads_days: 1, prune_checkpoints: true });
    const continued = await runToGate(project);
    await approve(continued.threadId);
    const schedule = await ctx.server.request(`/projects/${project}/schedules`, {
      method: 'POST',
      json: {
        agent: 'review',
        cron: '0 9 1 1 *',
        timezone: 'UTC',
        message: 'Review again',
        thread_id: continued.threadId,
      },
    });
    expect(schedule.status).toBe(201);
    await age(continued.threadId, 400 * 24);
    const before = await footprint(continued.threadId);

    await passNow();

    expect(await footprint(continued.threadId)).toEqual(before);
  });

  it('deletes a LangGraph API thread that never had a run once untouched past the keep time; a recent one stays', async () => {
    const project = await newProject();
    await setRetention(project, { keep_finished_threads_days: 30, prune_checkpoints: false });
    const [old, recent] = [randomUUID(), randomUUID()];
    for (const [id, days] of [
      [old, 31],
      [recent, 29],
    ] as const) {
      await ctx.server.pool.query(
        `INSERT INTO svc_lg_drafts (id, project_id, metadata, created_at, updated_at)
         VALUES ($1, $2, '{"chat": "abandoned"}', now() - make_interval(days => $3), now() - make_interval(days => $3))`,
        [id, project, days],
      );
    }
    const lgThread = (id: string) => ctx.server.request(`/lg/threads/${id}`);
    expect((await lgThread(old)).status).toBe(200);

    const result = await passNow();

    expect(result.draftsDeleted).toBe(1);
    expect((await lgThread(old)).status).toBe(404);
    expect((await lgThread(recent)).status).toBe(200);
    expect(ctx.server.logs.join('\n')).toContain(
      "retention deleted 1 thread(s) that never had a run, untouched past their project's keep time",
    );
  });

  it('keeps every thread of a project that never chose, and of one that keeps them forever', async () => {
    const never = await newProject();
    const forever = await newProject();
    await setRetention(forever, { keep_finished_threads_days: null, prune_checkpoints: false });
    const a = await runToGate(never);
    await approve(a.threadId);
    const b = await runToGate(forever);
    await approve(b.threadId);
    await age(a.threadId, 5000 * 24);
    await age(b.threadId, 5000 * 24);
    const before = [await footprint(a.threadId), await footprint(b.threadId)];

    await passNow();

    expect([await footprint(a.threadId), await footprint(b.threadId)]).toEqual(before);
  });
});

describe('pruning checkpoints', () => {
  it('keeps the latest and the fork point a run used (with the one before each); a fork from it still works', async () => {
    const project = await newProject();
    await setRetention(project, { keep_finished_threads_days: null, prune_checkpoints: true });
    const first = await runToGate(project);
    await approve(first.threadId);
    const history = await checkpoints(first.threadId);
    expect(history.map((c) => c.node)).toEqual([null, 'intake', 'analysis', 'gate', 'output']);
    const [start, afterIntake] = history;
    const branchRun = await forkToGate(
      first.threadId,
      afterIntake!.checkpoint_id,
      'Review: rename the settings loader',
    );
    await approve(first.threadId);
    const full = await checkpoints(first.threadId);
    const latest = full.at(-1)!;
    expect(latest).toMatchObject({ run_id: branchRun, node: 'output' });
    await age(first.threadId, 25);
    const before = await footprint(first.threadId);

    const result = await passNow();

    expect(result.threadsPruned).toBe(1);
    const after = await checkpoints(first.threadId);
    // The run's start and the fork point after its intake; the branch's last two: its gate and its end.
    expect(after.map((c) => c.checkpoint_id)).toEqual([
      start!.checkpoint_id,
      afterIntake!.checkpoint_id,
      full.at(-2)!.checkpoint_id,
      latest.checkpoint_id,
    ]);
    // Each kept checkpoint reads as before, the phase that wrote it included.
    expect(after[1]).toEqual(afterIntake);
    expect(after[3]).toEqual(latest);
    const pruned = await footprint(first.threadId);
    expect(pruned.checkpoints).toBe(4);
    expect(pruned.blobs).toBeLessThan(before.blobs);
    expect(pruned).toMatchObject({ runs: 2, decisions: before.decisions, events: before.events });
    expect(await blobIntegrity(first.threadId)).toEqual({ missing: 0, orphaned: 0 });
    // A checkpoint that was pruned is gone from the API too.
    const gone = full.find((c) => c.node === 'analysis' && c.run_id === first.runId)!;
    expect(
      (
        await ctx.server.request(`/threads/${first.threadId}/checkpoints/${gone.checkpoint_id}/runs`, {
          method: 'POST',
          json: { message: 'from a pruned one' },
        })
      ).status,
    ).toBe(404);

    // A fork from the kept fork point runs as one did before the prune: to the gate, then to the end.
    const again = await forkToGate(first.threadId, afterIntake!.checkpoint_id, 'Review: rename the logger');
    await approve(first.threadId);
    const detail = (await (await ctx.server.request(`/runs/${again}`)).json()) as { status: string; message: string };
    expect(detail).toMatchObject({ status: 'completed', message: 'Review: rename the logger' });
    // It read the state kept at the fork point: the first run's intake.
    const prompts = ctx.model.requests.map((r) => JSON.stringify(r.messages));
    expect(prompts.some((p) => p.includes('rename the logger') && p.includes('### intake\\nLooks fine'))).toBe(true);
    expect(await blobIntegrity(first.threadId)).toEqual({ missing: 0, orphaned: 0 });
  });

  it('prunes a thread once until a run ends on it again, and not before RETENTION_PRUNE_AFTER_HOURS', async () => {
    const project = await newProject();
    await setRetention(project, { keep_finished_threads_days: null, prune_checkpoints: true });
    const fresh = await runToGate(project);
    await approve(fresh.threadId);
    await age(fresh.threadId, 23);
    const before = await footprint(fresh.threadId);
    expect((await passNow()).threadsPruned).toBe(0);
    expect(await footprint(fresh.threadId)).toEqual(before);

    await age(fresh.threadId, 25);
    const full = await checkpoints(fresh.threadId);
    expect((await passNow()).threadsPruned).toBe(1);
    // No run was forked: the latest, and the one before it.
    const kept = full.slice(-2).map((c) => c.checkpoint_id);
    expect((await checkpoints(fresh.threadId)).map((c) => c.checkpoint_id)).toEqual(kept);
    expect((await passNow()).threadsPruned).toBe(0);

    // A run on the thread makes it due again once it has rested: the prune was two days ago, the run a day after.
    await ctx.server.pool.query(
      `UPDATE svc_threads SET checkpoints_pruned_at = now() - interval '48 hours' WHERE id = $1`,
      [fresh.threadId],
    );
    const next = await runToGate(project, { thread_id: fresh.threadId });
    await approve(fresh.threadId);
    await age(fresh.threadId, 25);
    expect((await passNow()).threadsPruned).toBe(1);
    const latest = await checkpoints(fresh.threadId);
    expect(latest.map((c) => c.run_id)).toEqual([next.runId, next.runId]);
    expect(latest.at(-1)!.node).toBe('output');
  });

  it('deleteCheckpoints removes the checkpoints named and the blobs only they used, in one call', async () => {
    const project = await newProject();
    const { threadId } = await runToGate(project);
    await approve(threadId);
    const history = await checkpoints(threadId);
    const repo = retentionRepository(ctx.server.pool);
    const last = history.slice(-2).map((c) => c.checkpoint_id);
    const deleted = await repo.deleteCheckpoints(threadId, last);
    expect(deleted.checkpoints).toBe(2);
    expect(deleted.blobs).toBeGreaterThan(0);
    expect((await checkpoints(threadId)).map((c) => c.node)).toEqual([null, 'intake', 'analysis']);
    expect(await blobIntegrity(threadId)).toEqual({ missing: 0, orphaned: 0 });
  });
});

describe('the janitor across the cluster', () => {
  it('does a pass once: of two processes that try at the same moment, one does the work', async () => {
    const project = await newProject();
    await setRetention(project, { keep_finished_threads_days: 1, prune_checkpoints: false });
    const old = await runToGate(project);
    await approve(old.threadId);
    await age(old.threadId, 48);
    await ctx.server.pool.query(`DELETE FROM svc_janitor_passes WHERE job = $1`, [RETENTION_JOB]);

    const [a, b] = await Promise.all([janitor('process-a').pass(), janitor('process-b').pass()]);

    expect([a.ran, b.ran].sort()).toEqual([false, true]);
    expect(a.threadsDeleted + b.threadsDeleted).toBe(1);
    // Within the interval, nobody passes again.
    expect((await janitor('process-c').pass()).ran).toBe(false);
    const { rows } = await ctx.server.pool.query(`SELECT started_by, finished_at FROM svc_janitor_passes`);
    expect(rows).toEqual([{ started_by: a.ran ? 'process-a' : 'process-b', finished_at: expect.any(Date) }]);
  });

  it("runs on each process's timer (RETENTION_INTERVAL_S)", async () => {
    const project = await newProject();
    await setRetention(project, { keep_finished_threads_days: 2, prune_checkpoints: false });
    const old = await runToGate(project);
    await approve(old.threadId);
    await age(old.threadId, 72);
    const other = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, RETENTION_INTERVAL_S: '1' });
    try {
      await until(async () => ((await footprint(old.threadId)).threads === 0 ? true : undefined), 10_000);
    } finally {
      await other.close();
    }
  });
});

describe('the settings', () => {
  it('are read by members, changed by owners only; another tenant sees 404; nonsense is 400', async () => {
    const project = await newProject();
    const as = async (role: string | null) => {
      const id = await addUser(ctx.server.pool, role ?? 'outsider', role ? [['project', project, role]] : []);
      return signSession(id, SECRET);
    };
    const [owner, member, viewer, outsider] = await Promise.all([as('owner'), as('member'), as('viewer'), as(null)]);
    const get = (token: string) =>
      ctx.server.request(`/projects/${project}/retention`, { headers: { authorization: `Bearer ${token}` } });

    const defaults = await get(viewer);
    expect(defaults.status).toBe(200);
    expect(await defaults.json()).toEqual({
      project_id: project,
      keep_finished_threads_days: null,
      prune_checkpoints: false,
      updated_at: null,
    });
    const body = { keep_finished_threads_days: 90, prune_checkpoints: true };
    expect((await setRetention(project, body, viewer)).status).toBe(403);
    expect((await setRetention(project, body, member)).status).toBe(403);
    const saved = await setRetention(project, body, owner);
    expect(saved.status).toBe(200);
    expect(await saved.json()).toMatchObject({ project_id: project, ...body, updated_at: expect.any(String) });
    expect(await (await get(member)).json()).toMatchObject(body);

    const hidden = await get(outsider);
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toEqual({ error: { code: 'not_found', message: `project ${project} not found` } });
    expect((await setRetention(project, body, outsider)).status).toBe(404);
    expect((await ctx.server.request(`/projects/${randomUUID()}/retention`)).status).toBe(404);

    for (const wrong of [
      { keep_finished_threads_days: 0, prune_checkpoints: false },
      { keep_finished_threads_days: 1.5, prune_checkpoints: false },
      { keep_finished_threads_days: 30 },
    ]) {
      const res = await setRetention(project, wrong, owner);
      expect(res.status, JSON.stringify(wrong)).toBe(400);
    }
    expect(await (await get(owner)).json()).toMatchObject(body);
  });
});
