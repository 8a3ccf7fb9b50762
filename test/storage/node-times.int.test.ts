import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src-server/db/pool';
import { initDb } from '../../src-server/db/migrate';
import { upsertNodeRowsQuery } from '../../src-server/db/run-nodes.repository';
import { runsRepository } from '../../src-server/db/runs.repository';
import { newRun, nodeWrite } from '../../src-server/storage/run-fixture';
import type { NodeWrite } from '../../src-server/storage/types';
import { createTestDatabase, type TestDatabase } from '../helpers/database';

/**
 * A node row's times as PostgreSQL keeps them (the Models view's answer speed and the run's timeline read them): a
 * statement may run well after it was built (a busy pool, a busy machine), and a phase shorter than that wait must not
 * end before it began.
 */
describe('node row times', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url);
    await initDb(pool);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  /** Builds the statement now and runs it `lateMs` later, as a statement waiting for a connection does. */
  const write = async (rows: NodeWrite[], lateMs = 0) => {
    const params: unknown[] = [];
    const sql = `WITH ${upsertNodeRowsQuery(rows, params)} SELECT 1`;
    await new Promise((resolve) => setTimeout(resolve, lateMs));
    await pool.query(sql, params);
  };

  it('keep a phase’s length as the process measured it when its entry was written late', async () => {
    const run = newRun();
    await runsRepository(pool).start(run, { owner: 'process-a', leaseS: 30 }, 10_000);
    const entered = nodeWrite(run.id, 'intake#1', 'intake');
    const { enteredAt } = entered;
    // The entry's statement runs 300 ms after it was built; the phase ends 40 ms after it began, its exit written now.
    await write([entered], 300);
    const exited = { ...entered, status: 'completed' as const, firstTokenAt: enteredAt + 10, exitedAt: enteredAt + 40 };
    await write([exited]);

    const { rows } = await pool.query<{ length_ms: number; first_token_ms: number }>(
      `SELECT (exited_at - entered_at) * 1000 AS length_ms, (first_token_at - entered_at) * 1000 AS first_token_ms
         FROM svc_run_nodes WHERE run_id = $1`,
      [run.id],
    );
    expect(rows[0]!.length_ms).toBeCloseTo(40, -1);
    expect(rows[0]!.first_token_ms).toBeCloseTo(10, -1);
  });
});
