import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { budgetsRepository } from '../../src-server/db/budgets.repository';
import { initDb } from '../../src-server/db/migrate';
import { createPool, type Pool } from '../../src-server/db/pool';
import { budgetsService } from '../../src-server/services/budgets.service';
import { createTestDatabase, type TestDatabase } from '../helpers/database';

/**
 * The budget check before each model call on a server with no budget: with hundreds of runs streaming, every
 * connection of the pool is busy, and a call that waited for its look at the budgets waited seconds for its first
 * token. Once a look has found none, calls go on at once, and one look at a time, in the background, tells of a budget
 * set since.
 */
describe('the budget check with no budget anywhere', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url, 1);
    await initDb(pool);
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await pool.end();
    await db.drop();
  });

  /** What a promise settles to, or `still waiting` when it has not within `ms`. */
  const within = <T>(work: Promise<T>, ms: number) =>
    Promise.race([work, new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), ms))]);

  it('keeps no call waiting for the database, and looks again once at a time', async () => {
    const budgets = budgetsRepository(pool);
    const looks = vi.spyOn(budgets, 'any');
    const { guard } = budgetsService({ access: {} as never, budgets, audit: {} as never });
    const run = { id: '00000000-0000-4000-8000-000000000001', projectId: '00000000-0000-4000-8000-000000000002' };
    expect(await guard.beforeCall(run)).toEqual({ refusal: null, warnings: [] });
    expect(looks).toHaveBeenCalledTimes(1);

    // Later than the time a look is trusted, with every connection of the pool taken by other work.
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 60_000);
    const held = await pool.connect();
    try {
      const checks = Array.from({ length: 50 }, () => guard.beforeCall(run));
      expect(await within(Promise.all(checks), 1000)).toEqual(checks.map(() => ({ refusal: null, warnings: [] })));
      expect(looks).toHaveBeenCalledTimes(2);
    } finally {
      held.release();
    }
  });
});
