import { inject } from 'vitest';
import { createDatabase, type TestDatabase } from './postgres';

export type { TestDatabase };

/** A fresh database on the run's shared server (see global-setup.ts), so test files run in parallel. */
export function createTestDatabase(): Promise<TestDatabase> {
  return createDatabase(inject('databaseUrl'));
}
