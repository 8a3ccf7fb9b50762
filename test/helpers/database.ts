import { afterAll, beforeAll, inject } from 'vitest';
import { initDb } from '../../src-server/db/migrate';
import { createPool, type Pool } from '../../src-server/db/pool';
import { createDatabase, type TestDatabase } from './postgres';

export type { TestDatabase };

/** A fresh database on the run's shared server (see global-setup.ts), so test files run in parallel. */
export function createTestDatabase(): Promise<TestDatabase> {
  return createDatabase(inject('databaseUrl'));
}

/**
 * A fresh, migrated database for one file's tests and a pool of `size` connections to it: made before them, dropped
 * after. Read `pool` and `db` inside the tests (they are set once the file's setup has run).
 */
export function useMigratedDatabase(size: number): { readonly pool: Pool; readonly db: TestDatabase } {
  const state = {} as { pool: Pool; db: TestDatabase };
  beforeAll(async () => {
    state.db = await createTestDatabase();
    state.pool = createPool(state.db.url, size);
    await initDb(state.pool);
  });
  afterAll(async () => {
    await state.pool?.end();
    await state.db?.drop();
  });
  return state;
}

/** What a promise settles to, or `still waiting` when it has not within `ms`. */
export function within<T>(work: Promise<T>, ms: number): Promise<T | 'still waiting'> {
  return Promise.race([
    work,
    new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), ms)),
  ]);
}
