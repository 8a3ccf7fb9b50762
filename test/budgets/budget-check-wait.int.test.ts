import { afterAll, describe, expect, it, vi } from 'vitest';
import { budgetsRepository } from '../../src-server/db/budgets.repository';
import { budgetsService } from '../../src-server/services/budgets.service';
import { useMigratedDatabase, within } from '../helpers/database';

/**
 * The budget check before each model call on a server with no budget: with hundreds of runs streaming, every
 * connection of the pool is busy, and a call that waited for its look at the budgets waited seconds for its first
 * token. Once a look has found none, calls go on at once, and one look at a time, in the background, tells of a budget
 * set since.
 */
describe('the budget check with no budget anywhere', () => {
  const database = useMigratedDatabase(1);
  afterAll(() => vi.restoreAllMocks());

  it('keeps no call waiting for the database, and looks again once at a time', async () => {
    const budgets = budgetsRepository(database.pool);
    const looks = vi.spyOn(budgets, 'any');
    const { guard } = budgetsService({ access: {} as never, budgets, audit: {} as never });
    const run = { id: '00000000-0000-4000-8000-000000000001', projectId: '00000000-0000-4000-8000-000000000002' };
    expect(await guard.beforeCall(run)).toEqual({ refusal: null, warnings: [] });
    expect(looks).toHaveBeenCalledTimes(1);

    // Later than the time a look is trusted, with every connection of the pool taken by other work.
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 60_000);
    const held = await database.pool.connect();
    try {
      const checks = Array.from({ length: 50 }, () => guard.beforeCall(run));
      expect(await within(Promise.all(checks), 1000)).toEqual(checks.map(() => ({ refusal: null, warnings: [] })));
      expect(looks).toHaveBeenCalledTimes(2);
    } finally {
      held.release();
    }
  });
});
