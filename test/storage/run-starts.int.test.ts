import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { runsRepository } from '../../src-server/db/runs.repository';
import { newRun } from '../../src-server/storage/run-fixture';
import { useMigratedDatabase } from '../helpers/database';

/**
 * Runs started at once go in a few shared statements (db/runs.repository.ts startRows) rather than one each, which
 * waited for each other's commit under their caller's lock while holding the pool's connections. Each start is still
 * its own: the caller's cap on local runs counts the runs started beside it, and a start the database refuses fails
 * alone.
 */
describe('runs started at once', () => {
  const database = useMigratedDatabase(20);
  const lease = { owner: 'process-a', leaseS: 30 };

  it('go in a few statements, and a caller’s cap on local runs holds among them', async () => {
    const runs = runsRepository(database.pool);
    const user = randomUUID();
    const statements = vi.spyOn(database.pool, 'query');
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        runs.start(newRun({ createdBy: user, localCap: 50, message: `run ${i}` }), lease, 100),
      ),
    );
    const sent = statements.mock.calls.length;
    statements.mockRestore();
    expect(sent).toBeLessThanOrEqual(8);
    expect(outcomes.filter((o) => o.outcome === 'started')).toHaveLength(50);
    expect(outcomes.filter((o) => o.outcome === 'over_limit')).toEqual(
      Array.from({ length: 10 }, () => ({ outcome: 'over_limit', going: 50 })),
    );
    const { rows } = await database.pool.query<{ running: number; threads: number }>(
      `SELECT count(*)::int AS running, count(DISTINCT thread_id)::int AS threads
         FROM svc_runs WHERE created_by = $1 AND status = 'running'`,
      [user],
    );
    expect(rows[0]).toEqual({ running: 50, threads: 50 });
  });

  it('fail only the start the database refuses', async () => {
    const runs = runsRepository(database.pool);
    const taken = newRun();
    await runs.start(taken, lease, 100);
    // A new thread under an id that exists already cannot be written: that start alone fails.
    const starts = Array.from({ length: 30 }, (_, i) =>
      i === 11 ? newRun({ threadId: taken.threadId }) : newRun({ message: `run ${i}` }),
    );
    const outcomes = await Promise.allSettled(starts.map((run) => runs.start(run, lease, 100)));
    expect(outcomes.map((o) => o.status)).toEqual(starts.map((_, i) => (i === 11 ? 'rejected' : 'fulfilled')));
    for (const [i, run] of starts.entries()) {
      expect(await runs.get(run.id)).toEqual(i === 11 ? undefined : expect.objectContaining({ status: 'running' }));
    }
  });
});
