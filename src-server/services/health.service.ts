import { databaseStatus } from '../db/migrate';
import type { Pool } from '../db/pool';

/** What GET /health (http/health.router.ts) reads of the database. */
export function healthService(deps: { pool: Pool }) {
  const { pool } = deps;
  return {
    /** Whether the database answers, and the newest migration it holds. Never throws. */
    database: (): Promise<{ ok: boolean; schemaVersion: string | null }> => databaseStatus(pool),
  };
}

export type HealthService = ReturnType<typeof healthService>;
