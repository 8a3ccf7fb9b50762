import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Schedule } from '../../src-server/contracts/schedules';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { until } from '../helpers/until';

/**
 * Schedules on a cluster: two server processes of their own on one PostgreSQL, each with its scheduler ticking every
 * second, over about four minutes of real time. A once-a-minute schedule (the real grain) must make exactly one run
 * per occurrence, whichever process sees it first; a five-second one (SCHEDULES_ALLOW_SECONDS) shows the same over
 * many occurrences while the process that fires most is stopped, and stops when paused; and with both processes
 * stopped over an occurrence, the next start follows each schedule's catch-up policy. A process killed between its
 * claim of a fire and its run leaves the fire to the other, which runs it once.
 */
const ctx = useIntegrationServer({ server: false });
const ENV = { SCHEDULES_POLL_S: '1', SCHEDULES_ALLOW_SECONDS: 'true', SCHEDULES_OWNER_MIN_INTERVAL_S: '1' };
/** An occurrence seen more than this late (three polls, at least 10 s) counts as missed. */
const MISSED_AFTER_MS = 10_000;

let servers: ServerProcess[] = [];
let db: pg.Client;

beforeAll(async () => {
  ctx.model.reply(['scheduled']);
  servers = await Promise.all([ctx.spawn(ENV), ctx.spawn(ENV)]);
  db = new pg.Client({ connectionString: ctx.db.url });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await Promise.all(servers.map((s) => s.stop()));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits until the wall clock reaches `at` (ms since the epoch). */
const sleepUntil = (at: number) => sleep(Math.max(0, at - Date.now()));
const nextMinute = (after: number) => Math.ceil((after + 1) / 60_000) * 60_000;

async function create(server: ServerProcess, body: Record<string, unknown>): Promise<Schedule> {
  const res = await server.request(`/projects/${DEFAULT_PROJECT_ID}/schedules`, { method: 'POST', json: body });
  expect(res.status).toBe(201);
  return (await res.json()) as Schedule;
}

/** The runs a schedule made, counted in svc_runs by their message (not by the fires that say they made them). */
const runsOf = async (message: string) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM svc_runs WHERE message = $1`, [message])).rows[0]!.n;

interface FireRow {
  occurrence: Date;
  kind: string;
  outcome: string;
  run_id: string | null;
  run_key: string | null;
  process: string;
}
const firesOf = async (id: string) =>
  (
    await db.query<FireRow>(
      `SELECT occurrence, kind, outcome, run_id, run_key, process FROM svc_schedule_fires WHERE schedule_id = $1
        ORDER BY occurrence`,
      [id],
    )
  ).rows;
const pidOf = (fire: FireRow) => Number(fire.process.split('-')[0]);

describe('schedules on two server processes', () => {
  it('fires each occurrence once, stops when paused, and catches up by policy after both processes were down', async () => {
    const minuteOne = await create(servers[0]!, {
      agent: 'summary',
      cron: '* * * * *',
      timezone: 'UTC',
      message: 'minute, catch up one',
    });
    const minuteNone = await create(servers[1]!, {
      agent: 'summary',
      cron: '* * * * *',
      timezone: 'UTC',
      message: 'minute, catch up none',
      catch_up: 'none',
    });
    const seconds = await create(servers[1]!, {
      agent: 'summary',
      cron: '*/5 * * * * *',
      timezone: 'UTC',
      message: 'every five seconds',
    });
    const b1 = new Date(minuteOne.next_fire_at!).getTime();
    expect(b1).toBe(nextMinute(new Date(minuteOne.created_at).getTime()));

    // First minute: one run each, from whichever process claimed it.
    await sleepUntil(b1 + 4000);
    expect(await runsOf('minute, catch up one')).toBe(1);
    expect(await runsOf('minute, catch up none')).toBe(1);

    // Stop the process that fired most of the five-second occurrences so far: the other one goes on with them.
    const early = await firesOf(seconds.id);
    const counts = new Map<number, number>();
    for (const fire of early) counts.set(pidOf(fire), (counts.get(pidOf(fire)) ?? 0) + 1);
    const busiest = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
    const stopped = servers.find((s) => s.child.pid === busiest) ?? servers[0]!;
    await stopped.stop();
    await sleep(12_000);
    servers = [servers.find((s) => s !== stopped)!, await ctx.spawn(ENV)];

    // Second minute, with the replacement process in the race.
    const b2 = b1 + 60_000;
    await sleepUntil(b2 + 4000);
    expect(await runsOf('minute, catch up one')).toBe(2);
    expect(await runsOf('minute, catch up none')).toBe(2);
    for (const schedule of [minuteOne, minuteNone]) {
      expect((await firesOf(schedule.id)).map((f) => [f.occurrence.getTime(), f.kind, f.outcome])).toEqual([
        [b1, 'scheduled', 'started'],
        [b2, 'scheduled', 'started'],
      ]);
    }

    // Every five-second occurrence since the first made exactly one run, with no gap while a process was down.
    const pausedAt = Date.now();
    const paused = await servers[0]!.request(`/schedules/${seconds.id}/pause`, { method: 'POST' });
    expect(paused.status).toBe(200);
    // A fire claimed just before the pause starts its run in a moment.
    await sleep(2000);
    const fired = await firesOf(seconds.id);
    // From the first occurrence after it was made to the last one the pause could have caught (a poll of one second
    // and a fire in flight late): how many that is depends on where in the minute the test began, 13 at the least.
    expect(fired[0]!.occurrence.getTime()).toBe(new Date(seconds.next_fire_at!).getTime());
    expect(fired.at(-1)!.occurrence.getTime()).toBeGreaterThanOrEqual(Math.floor(pausedAt / 5000) * 5000 - 5000);
    expect(fired.length).toBeGreaterThanOrEqual(13);
    expect(fired.every((f) => f.kind === 'scheduled' && f.outcome === 'started' && f.run_id)).toBe(true);
    const steps = fired.slice(1).map((f, i) => f.occurrence.getTime() - fired[i]!.occurrence.getTime());
    expect(new Set(steps)).toEqual(new Set([5000]));
    expect(await runsOf('every five seconds')).toBe(fired.length);
    // Both processes fired some: the stopped one before it stopped, the other while it was down.
    expect(new Set(fired.map(pidOf)).size).toBeGreaterThanOrEqual(2);
    // Paused, it fires no more.
    await sleep(11_000);
    expect(await runsOf('every five seconds')).toBe(fired.length);

    // Both processes down over the third minute's occurrence, and back after it counts as missed.
    const b3 = b2 + 60_000;
    await sleepUntil(b3 - 8000);
    await Promise.all(servers.map((s) => s.stop()));
    await sleepUntil(b3 + MISSED_AFTER_MS + 8000);
    servers = await Promise.all([ctx.spawn(ENV), ctx.spawn(ENV)]);
    await sleep(4000);

    // catch_up one: one run for the missed occurrence; none: a skipped fire and no run.
    expect(await runsOf('minute, catch up one')).toBe(3);
    expect(await runsOf('minute, catch up none')).toBe(2);
    const one = (await firesOf(minuteOne.id)).at(-1)!;
    expect([one.occurrence.getTime(), one.kind, one.outcome]).toEqual([b3, 'catch_up', 'started']);
    const none = (await firesOf(minuteNone.id)).at(-1)!;
    expect([none.occurrence.getTime(), none.kind, none.outcome, none.run_id]).toEqual([
      b3,
      'catch_up',
      'skipped',
      null,
    ]);
    // The paused schedule stayed paused across the restart: its occurrences while paused never ran.
    expect(await runsOf('every five seconds')).toBe(fired.length);
    const reread = (await (await servers[0]!.request(`/schedules/${minuteOne.id}`)).json()) as Schedule;
    expect(new Date(reread.next_fire_at!).getTime()).toBe(b3 + 60_000);
  }, 330_000);

  it('takes over a fire whose process was killed between its claim and its run, and runs it once', async () => {
    const thread = (await (
      await servers[0]!.request('/threads', { method: 'POST', json: { agent: 'summary' } })
    ).json()) as { id: string };
    // The test holds the thread's row: a fire's run that continues it waits there, after its claim, before its row.
    const holder = new pg.Client({ connectionString: ctx.db.url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM svc_threads WHERE id = $1 FOR UPDATE', [thread.id]);
    const made = await create(servers[0]!, {
      agent: 'summary',
      cron: '* * * * *',
      timezone: 'UTC',
      message: 'killed mid-fire',
      thread_id: thread.id,
    });
    const claimed = await until(async () => (await firesOf(made.id))[0], 70_000);
    // One occurrence is enough: paused, the schedule claims no other (a fire already claimed still runs).
    expect((await servers[0]!.request(`/schedules/${made.id}/pause`, { method: 'POST' })).status).toBe(200);
    expect(claimed).toMatchObject({ kind: 'scheduled', outcome: 'starting', run_id: null });
    const victim = servers.find((s) => s.child.pid === pidOf(claimed))!;
    await victim.stop('SIGKILL');
    await holder.query('ROLLBACK');
    await holder.end();

    // After its lease (three polls, at least 10 s), the other process takes it over and starts its run, once.
    const settled = await until(async () => {
      const fire = (await firesOf(made.id))[0]!;
      return fire.outcome === 'starting' ? undefined : fire;
    }, 30_000);
    expect(settled).toMatchObject({ kind: 'scheduled', outcome: 'started', run_id: claimed.run_key });
    expect(pidOf(settled)).not.toBe(victim.child.pid);
    await sleep(3000);
    expect(await runsOf('killed mid-fire')).toBe(1);
    expect(await firesOf(made.id)).toHaveLength(1);
  }, 120_000);
});
