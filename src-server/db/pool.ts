import pg from 'pg';
import { getLogger } from '../log';

const log = getLogger('svc.db');

// BIGINT counts (COUNT(*)) come back as strings by default; ours always fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Pool = pg.Pool;

/** How the service's connections name themselves to PostgreSQL (pg_stat_activity). */
export const APPLICATION_NAME = 'agent-workflow-service';

/** The processes of one cluster the documentation plans for (docs/configuration.md#the-database). */
export const PLANNED_PROCESSES = 3;

/**
 * How long opening a connection may take before the database counts as unreachable. Under a thousand streams at once
 * the event loop has been seconds late, and a connection whose database answered at once timed out at 5 s.
 */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * An idle connection is closed after this long. Under load a pool of shared statements leaves some of its connections
 * idle for a while; closed after 30 s, they had to be opened again in the middle of the load, when opening one is
 * slowest. PostgreSQL keeps an idle connection for little.
 */
const IDLE_TIMEOUT_MS = 10 * 60_000;

/**
 * A connection that gives up opening after CONNECT_TIMEOUT_MS. The pool's own connectionTimeoutMillis would also bound
 * the wait for a free connection, and under load that wait is the back-pressure of a busy pool, not a database away:
 * it made runs fail under load (500 at once) with "timeout exceeded when trying to connect".
 */
function timedClient(connectTimeoutMs: number) {
  return class TimedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
    }
  };
}

export function createPool(connectionString: string, max = 20, connectTimeoutMs = CONNECT_TIMEOUT_MS): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    application_name: APPLICATION_NAME,
    Client: timedClient(connectTimeoutMs),
    // Waiting in line for a connection never fails: work waits for a busy pool. A database that cannot be reached
    // fails the connection being opened (refused at once, or after the connect timeout), and that answers 503.
    connectionTimeoutMillis: 0,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
  });
  // An idle client whose server went away emits 'error'; unhandled, that would kill the process.
  pool.on('error', (error) => log.warn(`idle database connection lost: ${error.message}`));
  // So does a checked-out one between two statements (PostgreSQL killed or restarted), and the pool listens only to
  // idle ones: every client gets a listener of its own, for our transactions and for those of the libraries given
  // this pool (LangGraph's checkpointer). Its next statement then fails as usual, and the pool drops it on release.
  pool.on('connect', (client) =>
    client.on('error', (error) => log.warn(`database connection lost while in use: ${error.message}`)),
  );
  return pool;
}

/** Where it is decided (storage/, so that layers above db/ that may not import it can ask too). */
export { isDatabaseUnavailable } from '../storage/database-unavailable';

/**
 * Whether the database has room for the connections of a cluster of this service: each process keeps up to
 * `perProcess` (its pool, its runs' lease connection and its notification listener). Returns what to say when
 * PLANNED_PROCESSES would not fit.
 */
export async function connectionShortfall(pool: pg.Pool, perProcess: number): Promise<string | undefined> {
  const { rows } = await pool.query<{ max: number; reserved: number }>(
    `SELECT current_setting('max_connections')::integer AS max,
            current_setting('superuser_reserved_connections')::integer AS reserved`,
  );
  const { max, reserved } = rows[0]!;
  const fit = Math.floor((max - reserved) / perProcess);
  if (fit >= PLANNED_PROCESSES) return undefined;
  return (
    `PostgreSQL allows ${max} connections (${reserved} of them reserved), and each process of this service keeps up ` +
    `to ${perProcess} (DATABASE_POOL_MAX, one for the runs' leases and one that listens): ${fit} process(es) fit, fewer than the ` +
    `${PLANNED_PROCESSES} of a cluster. Lower DATABASE_POOL_MAX, or raise max_connections`
  );
}

/** Runs `work` on one connection of the pool, then gives it back (createPool makes a lost connection harmless). */
async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await work(client);
  } finally {
    client.release();
  }
}

/** Runs `work` in one transaction: committed when it returns, rolled back when it throws. */
export function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query('BEGIN');
    try {
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  });
}

/** Runs `work` while holding a cluster-wide advisory lock, so two processes never migrate at once. */
export function withAdvisoryLock<T>(
  pool: pg.Pool,
  key: number,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query('SELECT pg_advisory_lock($1)', [key]);
    try {
      return await work(client);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [key]);
    }
  });
}
