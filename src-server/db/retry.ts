import { getLogger } from '../log';
import { retryTransient } from '../storage/retry';
import { isDatabaseUnavailable } from './pool';

const log = getLogger('svc.db');

/**
 * Runs a statement that is safe to repeat (idempotent on its keys) until it succeeds, while the database is away
 * (restarting, unreachable): the work of a run waits for it rather than failing. Any other error, or failures that
 * last past `giveUpMs`, are thrown.
 */
export function whileUnavailable<T>(what: string, work: () => Promise<T>, giveUpMs: number): Promise<T> {
  return retryTransient(work, { isTransient: isDatabaseUnavailable, log, what, giveUpAfterMs: giveUpMs });
}
