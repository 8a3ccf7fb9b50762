import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src-server/db/pool';
import { initDb } from '../../src-server/db/migrate';
import { runsRepository } from '../../src-server/db/runs.repository';
import { newRun } from '../../src-server/storage/run-fixture';
import { createTestDatabase, within, type TestDatabase } from '../helpers/database';

/**
 * A process whose work keeps every connection of its pool busy (hundreds of runs at once on a slow machine) still
 * renews its runs' leases on time: a renewal that waited behind the work would let a live run lapse, and another
 * process (or this one, in a second leg) would take it over while it runs.
 */
describe('run leases under a busy pool', () => {
  let db: TestDatabase;
  let pool: Pool;
  let leases: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url, 2);
    leases = createPool(db.url, 1);
    await initDb(pool);
  });
  afterAll(async () => {
    await pool.end();
    await leases.end();
    await db.drop();
  });

  it('are renewed, and not taken over, while every connection of the pool is taken', async () => {
    const runs = runsRepository(pool, leases);
    const lease = { owner: 'process-a', leaseS: 30 };
    const run = newRun();
    await runs.start(run, lease, 10_000);
    const held = await Promise.all([pool.connect(), pool.connect()]);
    try {
      expect(await within(runs.renewLeases(lease), 5000)).toEqual([run.id]);
      expect(await within(runs.claimLapsed({ owner: 'process-b', leaseS: 30 }), 5000)).toBeUndefined();
    } finally {
      for (const client of held) client.release();
    }
    // Without a connection of their own, a renewal waits for the work.
    const shared = runsRepository(pool);
    const busy = await Promise.all([pool.connect(), pool.connect()]);
    const late = shared.renewLeases(lease);
    try {
      expect(await within(late, 500)).toBe('still waiting');
    } finally {
      for (const client of busy) client.release();
    }
    expect(await late).toEqual([run.id]);
  });
});
