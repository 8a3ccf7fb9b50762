import { getLogger } from '../log';
import { isDatabaseUnavailable } from './pool';

const log = getLogger('svc.db');

const BACKOFF_MS = [50, 100, 200, 500, 1000, 2000];

/**
 * Runs a statement that is safe to repeat (idempotent on its keys) until it succeeds, while the database is away
 * (restarting, unreachable): the work of a run waits for it rather than failing. Any other error, or failures that
 * last past `giveUpMs`, are thrown.
 */
export async function whileUnavailable<T>(what: string, work: () => Promise<T>, giveUpMs: number): Promise<T> {
  // Counted from the first failure: a statement that waited its turn under load has not been failing meanwhile.
  let failingSince: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      failingSince ??= Date.now();
      if (!isDatabaseUnavailable(error) || Date.now() - failingSince > giveUpMs) throw error;
      if (attempt === 0 || attempt % 20 === 0) log.warn(`${what} failed, trying again: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]));
    }
  }
}
