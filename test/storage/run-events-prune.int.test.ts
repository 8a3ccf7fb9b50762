import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src-server/db/pool';
import { runEventsRepository } from '../../src-server/db/run-events.repository';
import { runWritesRepository } from '../../src-server/db/run-writes.repository';
import { runsRepository } from '../../src-server/db/runs.repository';
import { initDb } from '../../src-server/db/migrate';
import { newRun } from '../../src-server/storage/run-fixture';
import { createTestDatabase } from '../helpers/database';

/** RUN_EVENTS_RETENTION_DAYS: the hourly prune of the stored events of runs finished long ago. */
describe('pruning stored run events', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url);
    await initDb(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  /** A run with a node's 300 tokens between its start and its end, finished `daysAgo`. */
  async function finishedRun(daysAgo: number): Promise<string> {
    const run = newRun();
    await runsRepository(pool).start(run, { owner: 'process-a', leaseS: 30 }, 10_000);
    const events = Array.from({ length: 302 }, (_, i) => ({
      runId: run.id,
      seq: i + 1,
      type: i === 0 ? 'node_enter' : i === 301 ? 'node_exit' : 'token',
      data: JSON.stringify({ n: i + 1 }),
      holder: { owner: 'process-a', attempt: 1 },
    }));
    await runWritesRepository(pool).write({ events, nodes: [], calls: [] });
    await pool.query(
      `UPDATE svc_runs SET status = 'completed', finished_at = now() - make_interval(days => $2) WHERE id = $1`,
      [run.id, daysAgo],
    );
    return run.id;
  }

  it('drops every event of a run finished over the retention, counting events rather than rows, and keeps a recent run', async () => {
    const old = await finishedRun(40);
    const recent = await finishedRun(10);
    const events = runEventsRepository(pool);

    expect(await events.prune(30)).toBe(302);

    expect(await events.after(old, 0, 1000)).toEqual([]);
    expect(await events.after(recent, 0, 1000)).toHaveLength(302);
  });
});
