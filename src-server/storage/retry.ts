import { errorMessage } from '../contracts/errors';
import type { Logger } from '../log';

/** Whether an error is one that passes (the database restarting or unreachable for a while): worth trying again. */
export type IsTransient = (error: unknown) => boolean;

export interface RetryOptions {
  isTransient: IsTransient;
  log: Logger;
  /** What is being read or written, for the log line. */
  what: string;
  /** Gives up once the write has been failing this long (the last error is thrown); default: never. */
  giveUpAfterMs?: number;
  signal?: AbortSignal;
}

const BACKOFF_MS = [50, 100, 200, 500, 1000, 2000];

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Runs a write that is safe to repeat (every store write of the engine is: idempotent on its keys) until it succeeds,
 * while its errors are transient: a database that restarts, or cannot be reached for a while, makes the run wait,
 * not fail. Any other error is thrown at once. The engine's writes and the database's own statements (db/retry.ts)
 * both wait through it.
 */
export async function retryTransient<T>(work: () => Promise<T>, options: RetryOptions): Promise<T> {
  // Counted from the first failure: a write that waited its turn under load has not been failing meanwhile.
  let failingSince: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      failingSince ??= Date.now();
      const late = options.giveUpAfterMs !== undefined && Date.now() - failingSince > options.giveUpAfterMs;
      if (!options.isTransient(error) || late || options.signal?.aborted) throw error;
      if (attempt === 0 || attempt % 20 === 0) {
        options.log.warn(`${options.what} failed, trying again: ${errorMessage(error)}`);
      }
      await sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!, options.signal);
    }
  }
}
