/**
 * Which errors mean the database is away: pure, so it lives below db/ (which re-exports it from db/pool.ts). The
 * database's own statements wait through these (db/retry.ts), main.ts hands it to the engine as its `isTransient`,
 * and the HTTP layer, which imports nothing of db/, answers them 503 database_unavailable.
 */

/** Node's network errors that mean the database host or its server is not there (or went away). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** PostgreSQL's shutdown and start-up refusals: admin_shutdown, crash_shutdown, cannot_connect_now. */
const SHUTDOWN_STATES = new Set(['57P01', '57P02', '57P03']);

/**
 * What node-postgres throws, without a code, when a connection ends or cannot be had in time: `timeout expired` is a
 * connection that did not open within its connect timeout (a database that does not answer, or one so busy, with an
 * event loop so late, that the answer came after it).
 */
const LOST_CONNECTION =
  /^(Connection terminated|timeout exceeded when trying to connect|timeout expired$|Client has encountered a connection error)/;

/**
 * Whether an error means the database cannot be reached right now (down, restarting, unreachable), as opposed to
 * a failing statement. The one place that knows: the HTTP layer answers these 503 database_unavailable, never 500.
 * Looks into an AggregateError's errors (a host with several addresses fails with one per address), but not into
 * `cause`: a failed fetch of a model runtime carries its ECONNREFUSED there, and that is not the database.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    // SQLSTATE class 08: connection exceptions.
    if (NETWORK_CODES.has(code) || SHUTDOWN_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (typeof message === 'string' && LOST_CONNECTION.test(message)) return true;
  return error instanceof AggregateError && error.errors.some((e) => isDatabaseUnavailable(e));
}
