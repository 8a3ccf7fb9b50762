import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TERMINAL_EVENTS } from '../../src-server/contracts/events';
import type { RunDetail } from '../../src-server/contracts/runs';
import type { Schedule } from '../../src-server/contracts/schedules';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { LATEST_MIGRATION } from '../../src-server/db/migrations/index';
import { numberedTokens, startModelFake, type ModelFake } from '../fixtures/fake-models';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer, type IntegrationFixture } from '../helpers/integration';
import { startNginx, type Nginx } from '../helpers/nginx';
import { previousRelease, PREVIOUS_RELEASE, type PreviousRelease } from '../helpers/previous-release';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { requestServer, type TestRequestInit } from '../helpers/request';
import { followAccepted, readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Upgrading a running service to this version from the release before it (test/helpers/previous-release.ts, built
 * from git): its database as that release left it, its runs at their gates, a tool call waiting for a person, a
 * schedule firing and a run streaming to a reader. First one process of the old release, stopped and replaced by
 * this version on its database; then the rolling upgrade a team does behind nginx, two processes of the old release
 * replaced one at a time (taken out of nginx, stopped with SIGTERM, a process of this version started and put in),
 * while both versions share the database and everything goes on through nginx.
 */

let release: PreviousRelease;
beforeAll(async () => {
  release = await previousRelease();
  console.log(
    `previous release ${PREVIOUS_RELEASE} (${release.sha}) in ${release.dir}: ` +
      `${release.built ? 'built' : 'reused'} in ${(release.ms / 1000).toFixed(1)} s`,
  );
}, 900_000);

/** A process of the previous release, with the fixture's env (its database, model and catalog) and `extra`. */
async function spawnPrevious(ctx: IntegrationFixture, extra: Record<string, string> = {}): Promise<ServerProcess> {
  return spawnServer(ctx.env(extra), 60_000, [], release.launch);
}

const types = (events: ReceivedEvent[]) => events.map((e) => e.data.type);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

describe('a database made by the release before', () => {
  const ctx = useIntegrationServer({ server: false });
  const running: ServerProcess[] = [];
  afterAll(async () => {
    for (const server of running) await server.stop();
  });

  it('upgrades on the first start of this version, which resumes the run the old release left at its gate', async () => {
    const started = Date.now();
    ctx.model.reply(['looks ', 'fine']);
    const old = await spawnPrevious(ctx);
    running.push(old);
    const before = await readEvents(
      await old.request('/graphs/review/run', { method: 'POST', json: { message: 'review before the upgrade' } }),
    );
    expect(types(before).at(-1)).toBe('gate_waiting');
    expect(before.map((e) => e.id)).toEqual(range(1, before.length));
    const { run_id: runId, thread_id: threadId } = before[0]!.data as { run_id: string; thread_id: string };
    // Stopped as a service manager stops it.
    expect(await old.stop('SIGTERM')).toBe(0);

    const current = await ctx.spawn();
    running.push(current);
    const health = await current.request('/health');
    expect(health.status).toBe(200);
    const reported = (await health.json()) as { status: string; schema_version?: unknown };
    expect(reported.status).toBe('ok');

    // The gate the old release stopped at, decided through this version: the run goes on and finishes.
    const waiting = (await (await current.request(`/runs/${runId}`)).json()) as RunDetail;
    expect(waiting).toMatchObject({ status: 'waiting_approval', pending_gate: { node: 'gate' } });
    const after = await readEvents(
      await followAccepted(
        await current.request(`/threads/${threadId}/gates/gate/approve`, {
          method: 'POST',
          json: { reason: 'approved after the upgrade' },
        }),
        (p) => current.request(p),
      ),
    );
    expect(types(after)).toContain('gate_approved');
    expect(types(after).at(-1)).toBe('run_done');
    // One stream: the new process's ids go on from the old one's last, without a gap.
    expect(after.map((e) => e.id)).toEqual(range(before.length + 1, before.length + after.length));
    const replay = await readEvents(
      await current.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': '0' } }),
    );
    expect(replay.map((e) => [e.id, e.data])).toEqual([...before, ...after].map((e) => [e.id, e.data]));
    const done = (await (await current.request(`/runs/${runId}`)).json()) as RunDetail;
    expect(done.status).toBe('completed');

    // The schema the upgrade left, as /health reports it: the last migration of this version.
    // Asserted last so that a failure here still shows that everything above held.
    expect(reported.schema_version).toBe(LATEST_MIGRATION);
    console.log(`test A: ${seconds(started)}`);
  });
});

describe('a rolling upgrade of two processes behind nginx', () => {
  const ctx = useIntegrationServer({ server: false });
  /**
   * The model of the streaming run, on its own so that its slow pace is nobody else's: an OpenAI stand-in. (Not
   * Gemini: a Gemini stream cut off by a shutdown ended the whole process of the release before; this version's
   * fix is tested in test/models/providers.int.test.ts.)
   */
  let slowModel: ModelFake;
  let catalog: string;
  let project: string;
  let db: pg.Client;
  let nginx: Nginx | undefined;
  /** Every process started, stopped at the end if the test has not. */
  const processes: ServerProcess[] = [];
  /** The processes behind nginx now, and those of the previous release by pid. */
  let live: ServerProcess[] = [];
  const oldPids = new Set<number>();

  const env = () =>
    ctx.env({
      GENERATED_DIR: catalog,
      RUN_LEASE_S: '2',
      SCHEDULES_POLL_S: '1',
      SCHEDULES_ALLOW_SECONDS: 'true',
      SCHEDULES_OWNER_MIN_INTERVAL_S: '1',
      CLOUD_C_API_KEY: 'openai-test-key',
      CLOUD_C_BASE_URL: `${slowModel.url}/v1`,
    });

  beforeAll(async () => {
    slowModel = await startModelFake();
    catalog = await writeFixtureCatalog([toolAgent]);
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'rolling-upgrade-'));
    fs.writeFileSync(path.join(project, 'README.md'), '# Demo\n');
    db = new pg.Client({ connectionString: ctx.db.url });
    await db.connect();
  });
  afterAll(async () => {
    await nginx?.stop();
    for (const server of processes) await server.stop();
    await db?.end();
    await slowModel?.close();
    fs.rmSync(catalog, { recursive: true, force: true });
    fs.rmSync(project, { recursive: true, force: true });
  });

  /** Every request of the test goes through nginx, as a client of the service does. */
  const request = (p: string, init?: TestRequestInit) => requestServer(nginx!.url, p, init);

  /** How the test's streams went: how often a reader attached again, and the answers that were not a stream. */
  const streams = { reattached: 0, refused: [] as string[] };

  /**
   * Reads a run's stream to its end as an EventSource does: when the connection drops (its process stopped) or ends
   * before the run does, it attaches again through nginx after the last id it has. Every event received goes to
   * `received`, in order. An answer that is not a stream is kept in `streams.refused` (and tried again); a frame that
   * breaks the contract fails the test.
   */
  async function follow(
    runId: () => string | undefined,
    first: Response,
    received: ReceivedEvent[] = [],
    timeoutMs = 180_000,
  ): Promise<ReceivedEvent[]> {
    const deadline = Date.now() + timeoutMs;
    let res: Response | undefined = first;
    for (;;) {
      if (res?.headers.get('content-type')?.startsWith('text/event-stream')) {
        await readEvents(res, (e) => void received.push(e)).catch((error: unknown) => {
          // The connection was cut (fetch's TypeError): attach again. Anything else is the test's failure.
          if (!(error instanceof TypeError)) throw error;
        });
      } else if (res) {
        streams.refused.push(`${res.status} ${await res.text()}`);
        await sleep(200);
      }
      const last = received.at(-1);
      if (last && TERMINAL_EVENTS.includes(last.data.type)) return received;
      if (Date.now() > deadline) throw new Error(`the stream of run ${runId()} did not end: ${types(received).at(-1)}`);
      const id = runId();
      if (!id) throw new Error('the stream dropped before it named its run');
      streams.reattached++;
      res = await request(`/runs/${id}/stream`, { headers: { 'last-event-id': String(last?.id ?? 0) } }).catch(
        async (error: Error) => {
          streams.refused.push(error.message);
          await sleep(200);
          return undefined;
        },
      );
    }
  }

  /** A decision's stream goes on from the stream before it: the next id, without a gap. */
  function expectContinues(before: ReceivedEvent[], after: ReceivedEvent[]): void {
    const from = before.at(-1)!.id + 1;
    expect(after.map((e) => e.id)).toEqual(range(from, from + after.length - 1));
  }

  /** Fails, with the answer and the last lines of every process behind nginx, unless `res` answered `status`. */
  async function expectStatus(res: Response, status: number): Promise<void> {
    if (res.status === status) return;
    const logs = live.map((s) => {
      const version = oldPids.has(s.child.pid!) ? `release ${PREVIOUS_RELEASE}` : 'this version';
      return `--- process ${s.child.pid} (${version}):\n${s.output().trimEnd().split('\n').slice(-20).join('\n')}`;
    });
    expect.fail(`${res.url} answered ${res.status}, not ${status}: ${await res.text()}\n${logs.join('\n')}`);
  }

  /** A gate decision through nginx, followed to the run's end. */
  async function decideGate(threadId: string, runId: string, action: 'approve' | 'reject', reason: string) {
    const accepted = await request(`/threads/${threadId}/gates/gate/${action}`, { method: 'POST', json: { reason } });
    await expectStatus(accepted, 202);
    return follow(() => runId, await followAccepted(accepted, request));
  }

  /** The pid of the process that executes a run now (its lease's owner), or undefined. */
  async function executorPid(runId: string): Promise<number | undefined> {
    const { rows } = await db.query<{ owner_id: string | null; status: string }>(
      'SELECT owner_id, status FROM svc_runs WHERE id = $1',
      [runId],
    );
    const owner = rows[0]?.status === 'running' ? rows[0].owner_id : null;
    return owner ? Number(owner.split('-')[0]) : undefined;
  }

  const ids = async (table: 'svc_runs' | 'svc_threads') =>
    new Set((await db.query<{ id: string }>(`SELECT id FROM ${table}`)).rows.map((r) => r.id));

  it('replaces the processes one at a time while runs wait, a tool call waits, a schedule fires and a run streams', async () => {
    const started = Date.now();
    ctx.model.reply(['looks ', 'fine']);
    const old = await Promise.all([spawnPrevious(ctx, env()), spawnPrevious(ctx, env())]);
    processes.push(...old);
    for (const s of old) oldPids.add(s.child.pid!);
    nginx = await startNginx(old.map((s) => s.url));
    live = [...old];

    // Three runs of the review agent at their gates.
    const reviews: { runId: string; threadId: string; events: ReceivedEvent[] }[] = [];
    for (const n of [1, 2, 3]) {
      const events = await readEvents(
        await request('/graphs/review/run', { method: 'POST', json: { message: `review ${n}` } }),
      );
      expect(types(events).at(-1)).toBe('gate_waiting');
      const { run_id: runId, thread_id: threadId } = events[0]!.data as { run_id: string; thread_id: string };
      reviews.push({ runId, threadId, events });
    }

    // A tool call waiting for an owner's decision: mock.append writes a line, its effect.
    const effects = path.join(project, 'effects.log');
    ctx.model.toolTurns = [[{ name: 'mock__append', arguments: { file: effects, line: 'appended once' } }]];
    const toolEvents = await readEvents(
      await request('/graphs/tool-review/run', {
        method: 'POST',
        json: { message: 'act on the project', project_path: project },
      }),
    );
    expect(types(toolEvents).at(-1)).toBe('tool_waiting');
    const toolRun = toolEvents[0]!.data as { run_id: string; thread_id: string };
    const waitingCall = toolEvents.at(-1)!.data as { tool_call?: { call_id: string; tool: string } };
    expect(waitingCall.tool_call?.tool).toBe('mock.append');
    const callId = waitingCall.tool_call!.call_id;

    // The schedule: every five seconds (the least the tests' settings allow), made on the old release.
    const made = await request(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
      method: 'POST',
      json: { agent: 'summary', cron: '*/5 * * * * *', timezone: 'UTC', message: 'every five seconds, upgraded' },
    });
    await expectStatus(made, 201);
    const schedule = (await made.json()) as Schedule;

    // A run streaming slowly (three phases of 150 tokens 100 ms apart), read through nginx as it is written.
    slowModel.reply(numberedTokens(150, 'w'), 100);
    const streamed: ReceivedEvent[] = [];
    let streamRunId: string | undefined;
    const reading = follow(
      () => streamRunId,
      await request('/graphs/summary/run', {
        method: 'POST',
        json: { message: 'stream across the upgrade', model: 'cloud_c:gpt-test' },
      }),
      streamed,
    );
    streamRunId = await until(async () => (streamed[0]?.data as { run_id?: string } | undefined)?.run_id);
    await until(async () => (streamed.filter((e) => e.data.type === 'token').length >= 20 ? true : undefined), 30_000);

    // What the database holds before the upgrade.
    const runsBefore = await ids('svc_runs');
    const threadsBefore = await ids('svc_threads');
    const versions = async () =>
      (
        await db.query<{ id: string; agent_version: string | null }>(
          `SELECT id, agent_version FROM svc_runs WHERE id = ANY($1) ORDER BY id`,
          [[...runsBefore]],
        )
      ).rows;
    const versionsBefore = await versions();
    console.log(`test B: set up on the old release in ${seconds(started)}`);

    // The rolling upgrade, one process at a time: out of nginx, SIGTERM, a process of this version in its place.
    const handedOver: number[] = [];
    const fresh: ServerProcess[] = [];
    const replace = async (previous: ServerProcess) => {
      const at = Date.now();
      await nginx!.reload(live.filter((s) => s !== previous).map((s) => s.url));
      if ((await executorPid(streamRunId!)) === previous.child.pid) handedOver.push(previous.child.pid!);
      const code = await previous.stop('SIGTERM');
      expect(code, `process ${previous.child.pid} stopped with ${code}:\n${previous.output().slice(-4000)}`).toBe(0);
      const next = await ctx.spawn(env());
      processes.push(next);
      fresh.push(next);
      live = [...live.filter((s) => s !== previous), next];
      await nginx!.reload(live.map((s) => s.url));
      console.log(`test B: replaced process ${previous.child.pid} by ${next.child.pid} in ${seconds(at)}`);
    };

    // The first to go is the one that executes the streaming run: it goes on elsewhere.
    const executing = await executorPid(streamRunId);
    const firstOut = old.find((s) => s.child.pid === executing);
    expect(firstOut, 'a process of the old release executes the streaming run').toBeDefined();
    await replace(firstOut!);

    // One old process and one new: the tool call is approved, one run approved and one rejected, through nginx.
    const toolDecision = await request(`/threads/${toolRun.thread_id}/tool-calls/${callId}/approve`, {
      method: 'POST',
      json: { reason: 'run it once' },
    });
    await expectStatus(toolDecision, 202);
    const toolStream = await follow(() => toolRun.run_id, await followAccepted(toolDecision, request));
    expect(types(toolStream)).toEqual(expect.arrayContaining(['tool_decided', 'tool_result']));
    expect(types(toolStream).at(-1)).toBe('gate_waiting');
    expectContinues(toolEvents, toolStream);
    const approvedFirst = await decideGate(reviews[0]!.threadId, reviews[0]!.runId, 'approve', 'during the upgrade');
    expect(types(approvedFirst).at(-1)).toBe('run_done');
    expectContinues(reviews[0]!.events, approvedFirst);
    const rejected = await decideGate(reviews[2]!.threadId, reviews[2]!.runId, 'reject', 'not this one');
    expect(types(rejected)).toEqual(['gate_rejected', 'run_rejected']);
    expectContinues(reviews[2]!.events, rejected);

    await replace(live.find((s) => oldPids.has(s.child.pid!))!);
    expect(live.every((s) => !oldPids.has(s.child.pid!))).toBe(true);

    // This version alone: the last review and the tool-review run's gate approved.
    const approvedLast = await decideGate(reviews[1]!.threadId, reviews[1]!.runId, 'approve', 'after the upgrade');
    expect(types(approvedLast).at(-1)).toBe('run_done');
    expectContinues(reviews[1]!.events, approvedLast);
    const toolDone = await decideGate(toolRun.thread_id, toolRun.run_id, 'approve', 'publish it');
    expect(types(toolDone).at(-1)).toBe('run_done');
    expectContinues([...toolEvents, ...toolStream], toolDone);

    // The streaming run's reader, which kept reading through both replacements.
    await reading;
    // A few occurrences of the schedule with this version alone, then it is paused.
    await sleep(11_000);
    const pausedAt = Date.now();
    await expectStatus(await request(`/schedules/${schedule.id}/pause`, { method: 'POST' }), 200);
    // A fire claimed just before the pause starts its run in a moment; then every run ends.
    await sleep(2000);
    await until(async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM svc_runs WHERE status IN ('queued', 'running')`,
      );
      return rows[0]!.n === 0 ? true : undefined;
    }, 60_000);

    // The streaming run: one stream, every event once and in order, ending in run_done. Ids go up by one, except
    // where the run went on in another process after its executor stopped: there the stream goes on with
    // run_resumed, above every id the stopped process could have handed out (docs/run-lifecycle.md).
    expect(types(streamed).at(-1)).toBe('run_done');
    const streamedIds = streamed.map((e) => e.id);
    expect(new Set(streamedIds).size).toBe(streamedIds.length);
    expect(streamedIds[0]).toBe(1);
    const leaps = streamed.slice(1).filter((e, i) => e.id !== streamed[i]!.id + 1);
    expect(leaps.map((e) => e.data.type)).toEqual(handedOver.map(() => 'run_resumed'));
    expect(streamed.filter((e) => e.data.type === 'run_resumed')).toHaveLength(handedOver.length);
    expect(handedOver.length).toBeGreaterThanOrEqual(1);
    // Nothing the reader got differs from the stored stream, and nothing stored was missed.
    const replay = await readEvents(
      await request(`/runs/${streamRunId}/stream`, { headers: { 'last-event-id': '0' } }),
    );
    expect(streamed.map((e) => [e.id, e.data])).toEqual(replay.map((e) => [e.id, e.data]));
    // Every stream of the test was answered as a stream, re-attaching included: nginx never sent one to a process
    // that had stopped.
    expect(streams.refused).toEqual([]);

    // The tool ran once, as approved: one line, one start of its call.
    expect(fs.readFileSync(effects, 'utf8').split('\n').filter(Boolean)).toEqual(['appended once']);
    const { rows: calls } = await db.query<{ attempts: number; result: unknown }>(
      'SELECT attempts, result FROM svc_tool_calls WHERE id = $1',
      [callId],
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]!.attempts).toBe(1);
    expect(calls[0]!.result).not.toBeNull();

    // Every run decided through nginx ended as decided.
    const statusOf = async (runId: string) => ((await (await request(`/runs/${runId}`)).json()) as RunDetail).status;
    expect(await Promise.all([...reviews.map((r) => r.runId), toolRun.run_id, streamRunId].map(statusOf))).toEqual([
      'completed',
      'completed',
      'rejected',
      'completed',
      'completed',
    ]);

    // The schedule fired once per occurrence, from its first to the last the pause could catch, on both versions.
    const { rows: fires } = await db.query<{
      occurrence: Date;
      kind: string;
      outcome: string;
      run_id: string | null;
      process: string;
    }>(
      `SELECT occurrence, kind, outcome, run_id, process FROM svc_schedule_fires WHERE schedule_id = $1
        ORDER BY occurrence`,
      [schedule.id],
    );
    expect(fires[0]!.occurrence.getTime()).toBe(new Date(schedule.next_fire_at!).getTime());
    expect(fires.at(-1)!.occurrence.getTime()).toBeGreaterThanOrEqual(Math.floor(pausedAt / 5000) * 5000 - 5000);
    const steps = fires.slice(1).map((f, i) => f.occurrence.getTime() - fires[i]!.occurrence.getTime());
    expect(new Set(steps)).toEqual(new Set([5000]));
    expect(fires.filter((f) => f.kind !== 'scheduled' || f.outcome !== 'started' || !f.run_id)).toEqual([]);
    const fireRuns = fires.map((f) => f.run_id!);
    expect(new Set(fireRuns).size).toBe(fires.length);
    const { rows: scheduledRuns } = await db.query<{ id: string; status: string }>(
      `SELECT id, status FROM svc_runs WHERE message = $1`,
      ['every five seconds, upgraded'],
    );
    expect(scheduledRuns.map((r) => r.id).sort()).toEqual([...fireRuns].sort());
    expect(scheduledRuns.filter((r) => r.status !== 'completed')).toEqual([]);
    const firedBy = new Set(fires.map((f) => Number(f.process.split('-')[0])));
    expect([...firedBy].some((pid) => oldPids.has(pid))).toBe(true);
    expect([...firedBy].some((pid) => fresh.some((s) => s.child.pid === pid))).toBe(true);

    // Nothing lost, nothing made but the schedule's runs: the runs and threads of before, and one each per fire.
    const runsAfter = await ids('svc_runs');
    const threadsAfter = await ids('svc_threads');
    expect([...runsBefore].filter((id) => !runsAfter.has(id))).toEqual([]);
    expect([...threadsBefore].filter((id) => !threadsAfter.has(id))).toEqual([]);
    const madeSince = fireRuns.filter((id) => !runsBefore.has(id));
    expect(runsAfter.size).toBe(runsBefore.size + madeSince.length);
    expect(threadsAfter.size).toBe(threadsBefore.size + madeSince.length);
    // The runs the old release started keep the versions it gave them; what a stored agent is, the upgraded cluster
    // has: made through nginx, run to its gate, a version published, the run finished on its own.
    expect(await versions()).toEqual(versionsBefore);
    const source = (prompt: string) =>
      `---\nname: upgraded-notes\ndescription: Made after the upgrade\n---\n${prompt}\n`;
    await expectStatus(
      await request(`/projects/${DEFAULT_PROJECT_ID}/agents`, {
        method: 'POST',
        json: { source: source('Notes, one.') },
      }),
      201,
    );
    const stored = await readEvents(
      await request('/graphs/upgraded-notes/run', { method: 'POST', json: { message: 'notes' } }),
    );
    expect(types(stored).at(-1)).toBe('gate_waiting');
    const storedRun = stored[0]!.data as { run_id: string; thread_id: string; agent_version?: string };
    expect(storedRun.agent_version).toBe('1');
    await expectStatus(
      await request('/agents/upgraded-notes', { method: 'PUT', json: { source: source('Notes, two.') } }),
      200,
    );
    const approvedStored = await readEvents(
      await followAccepted(
        await request(`/threads/${storedRun.thread_id}/gates/gate/approve`, { method: 'POST', json: {} }),
        (url) => request(url),
      ),
    );
    expect(types(approvedStored).at(-1)).toBe('run_done');
    expect(((await (await request(`/runs/${storedRun.run_id}`)).json()) as RunDetail).agent_version).toBe('1');
    console.log(
      `test B: ${seconds(started)}; ${fires.length} fires, ${streamed.length} events streamed, ` +
        `${handedOver.length} handovers of the streaming run, ${streams.reattached} re-attachments, ${runsAfter.size} runs`,
    );
  }, 300_000);
});
