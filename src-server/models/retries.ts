import { setTimeout as sleep } from 'node:timers/promises';
import type { RetryInfo } from './model-client';
import { causeCode } from './errors';

/** How a model call that fails for a passing reason is tried again (MODEL_RETRIES, MODEL_RETRY_MAX_WAIT_S). */
export interface RetryPolicy {
  /** Tries after the first; 0: never. */
  retries: number;
  /** The longest wait before one try, in seconds: a provider asking for longer (Retry-After) is not waited for. */
  maxWaitS: number;
  /** The first wait without a Retry-After, doubled at each try, with jitter (ms). */
  baseMs: number;
}

/** Statuses a provider or runtime answers while it is busy, restarting or briefly broken: worth another try. */
const PASSING_STATUSES = new Set([408, 409, 425, 429, 500, 502, 503, 504, 529]);
/** Connections that broke or were refused on the way: a runtime restarting, a proxy dropping a connection. */
const PASSING_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function statusOf(error: unknown): number | undefined {
  for (let current = error; current; current = (current as { cause?: unknown }).cause) {
    const { status, statusCode } = current as { status?: unknown; statusCode?: unknown };
    if (typeof status === 'number') return status;
    if (typeof statusCode === 'number') return statusCode;
  }
  return undefined;
}

/** The wait a 429 or 503 asks for (Retry-After: seconds or an HTTP date), in ms; null when it asks none. */
export function retryAfterMs(error: unknown, now = Date.now()): number | null {
  const headers = (error as { headers?: unknown }).headers;
  let value: string | null | undefined;
  if (headers instanceof Headers) value = headers.get('retry-after');
  else if (headers && typeof headers === 'object') {
    const found = Object.entries(headers).find(([name]) => name.toLowerCase() === 'retry-after');
    value = typeof found?.[1] === 'string' ? found[1] : undefined;
  }
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Why the failure is worth another try, in words for the stream; null when it is not (a refusal, a bad request). */
export function passingFailure(error: unknown): string | null {
  const status = statusOf(error);
  if (status !== undefined) return PASSING_STATUSES.has(status) ? `the provider answered ${status}` : null;
  const code = causeCode(error);
  if (code && PASSING_CODES.has(code)) return `the connection failed (${code})`;
  return null;
}

/**
 * Runs `attempt` and tries it again while it fails for a passing reason before anything was streamed: a 429 or a 5xx,
 * a connection reset or refused. `streamed()` tells whether the failed try had sent tokens: those reached the run's
 * readers already, so such a failure is never tried again. Each wait follows the provider's Retry-After when it gives
 * one (up to `maxWaitS`), else doubles from `baseMs` with full jitter; `onRetry` hears of it first. The signal ends
 * the wait.
 */
export async function withRetries<T>(
  policy: RetryPolicy,
  call: { signal: AbortSignal; onRetry?(info: RetryInfo): void },
  attempt: () => Promise<T>,
  streamed: () => boolean,
): Promise<T> {
  for (let retry = 1; ; retry++) {
    try {
      return await attempt();
    } catch (error) {
      call.signal.throwIfAborted();
      const reason = retry <= policy.retries && !streamed() ? passingFailure(error) : null;
      if (reason === null) throw error;
      const asked = retryAfterMs(error);
      if (asked !== null && asked > policy.maxWaitS * 1000) throw error;
      const backoff = policy.baseMs * 2 ** (retry - 1);
      const waitMs = Math.min(policy.maxWaitS * 1000, asked ?? backoff / 2 + Math.random() * (backoff / 2));
      call.onRetry?.({ retry, retries: policy.retries, wait_s: Math.round(waitMs / 100) / 10, reason });
      await sleep(waitMs, undefined, { signal: call.signal });
    }
  }
}
