import pg from 'pg';
import { getLogger } from '../log';
import { errorMessage } from '../contracts/errors';

const log = getLogger('svc.db');

// BIGINT counts (COUNT(*)) come back as strings by default; ours always fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Pool = pg.Pool;

export function createPool(connectionString: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30000 });
  // An idle client whose server went away emits 'error'; unhandled, that would kill the process.
  pool.on('error', (error) => log.warn(`idle database connection lost: ${error.message}`));
  return pool;
}

/** Database reachability for /health: never throws. */
export async function pingDatabase(pool: pg.Pool): Promise<{ ok: boolean; error?: string }> {
  try {
    await pool.query('SELECT 1');
    return { ok: true };
  } catch (error) {
    return { ok: false, error: errorMessage(error) };
  }
}

/** Runs `work` while holding a cluster-wide advisory lock, so two processes never migrate at once. */
export async function withAdvisoryLock<T>(pool: pg.Pool, key: number, work: () => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [key]);
    try {
      return await work();
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [key]);
    }
  } finally {
    client.release();
  }
}
