import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Schedule, ScheduleFire } from '../../src-server/contracts/schedules';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { createPool } from '../../src-server/db/pool';
import { schedulesRepository, type ScheduleRow } from '../../src-server/db/schedules.repository';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { until } from '../helpers/until';

/**
 * A fire whose process stopped between its claim and its run. The claim is made through the repository, as a server
 * process makes it, by a process that then does nothing more (as if killed at that instant), while no server runs;
 * then two servers start on the database, and race to take the fire over once its lease lapses.
 */
const ENV = { SCHEDULES_POLL_S: '0.5' };
const ctx = useIntegrationServer({ server: false });

let pool: pg.Pool;
beforeAll(() => {
  pool = createPool(ctx.db.url, 2);
  ctx.model.reply(['recovered']);
});
afterAll(() => pool?.end());

const runsWith = async (message: string) =>
  (await pool.query<{ id: string }>(`SELECT id FROM svc_runs WHERE message = $1`, [message])).rows.map((r) => r.id);

/**
 * Claims an occurrence that has come (this minute) as a process that stops right after: one fire, `starting`, leased
 * for a second. The schedule's next occurrence is next year's, out of the test's way.
 */
async function claimAndStop(id: string) {
  await pool.query(`UPDATE svc_schedules SET next_fire_at = date_trunc('minute', now()) WHERE id = $1`, [id]);
  const claimed = await schedulesRepository(pool).claim(
    id,
    'a-process-that-stopped',
    (row: ScheduleRow) => ({
      fires: [{ occurrence: row.next_fire_at!, kind: 'scheduled', outcome: 'starting', reason: null, firedBy: null }],
      nextFireAt: new Date(row.next_fire_at!.getTime() + 365 * 86_400_000),
    }),
    1,
  );
  expect(claimed?.starting).toHaveLength(1);
  return claimed!.starting[0]!;
}

describe('a fire left starting by a process that stopped', () => {
  it('is taken over by one other process once its lease lapses, and makes exactly one run', async () => {
    const first = await ctx.start(ENV);
    const create = async (message: string) => {
      const res = await first.request(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
        method: 'POST',
        json: { agent: 'summary', cron: '0 0 1 1 *', timezone: 'UTC', message },
      });
      expect(res.status).toBe(201);
      return (await res.json()) as Schedule;
    };
    const notStarted = await create('stopped before its run began');
    const begun = await create('stopped after its run began');
    // The run the second process began, as a run of that message, before it stopped.
    const earlier = await first.request('/agents/summary/runs', {
      method: 'POST',
      json: { message: 'stopped after its run began' },
    });
    expect(earlier.status).toBe(202);
    const { run_id: begunRun } = (await earlier.json()) as { run_id: string };
    await first.close();

    const left = await claimAndStop(notStarted.id);
    const leftBegun = await claimAndStop(begun.id);
    // The id its claim gave the run is the run's: the process stopped after the run was written, before the fire was.
    await pool.query(`UPDATE svc_schedule_fires SET run_key = $3 WHERE schedule_id = $1 AND occurrence = $2`, [
      begun.id,
      leftBegun.occurrence,
      begunRun,
    ]);
    const stuck = await pool.query(`SELECT outcome FROM svc_schedule_fires WHERE schedule_id = ANY($1::uuid[])`, [
      [notStarted.id, begun.id],
    ]);
    expect(stuck.rows).toEqual([{ outcome: 'starting' }, { outcome: 'starting' }]);

    const servers: TestServer[] = await Promise.all([ctx.start(ENV), ctx.start(ENV)]);
    const settled = async (fire: { scheduleId: string; occurrence: Date }) => {
      const list = (await (await servers[0]!.request(`/schedules/${fire.scheduleId}/fires`)).json()) as ScheduleFire[];
      return list.find((f) => f.occurrence === fire.occurrence.toISOString() && f.outcome !== 'starting');
    };
    const recovered = await until(() => settled(left));
    expect(recovered).toMatchObject({ kind: 'scheduled', outcome: 'started', run_id: left.runKey });
    expect(await runsWith('stopped before its run began')).toEqual([left.runKey]);

    const adopted = await until(() => settled(leftBegun));
    expect(adopted).toMatchObject({ kind: 'scheduled', outcome: 'started', run_id: begunRun });
    expect(await runsWith('stopped after its run began')).toEqual([begunRun]);

    // Both servers went on looking for lapsed fires: still one run each, and one of them took each fire.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await runsWith('stopped before its run began')).toEqual([left.runKey]);
    expect(await runsWith('stopped after its run began')).toEqual([begunRun]);
    const takers = await pool.query<{ process: string }>(
      `SELECT process FROM svc_schedule_fires WHERE schedule_id = ANY($1::uuid[])`,
      [[notStarted.id, begun.id]],
    );
    expect(takers.rows).toHaveLength(2);
    expect(takers.rows.every((row) => row.process !== 'a-process-that-stopped')).toBe(true);
    await Promise.all(servers.map((s) => s.close()));
  });
});
