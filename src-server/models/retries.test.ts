import { describe, expect, it } from 'vitest';
import { passingFailure, retryAfterMs, withRetries } from './retries';

const failure = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`status ${status}`), { status, headers });

describe('model call retries', () => {
  it('reads Retry-After as seconds or an HTTP date, from a Headers object or a plain record', () => {
    expect(retryAfterMs(failure(429, { 'Retry-After': '2' }))).toBe(2000);
    expect(retryAfterMs(Object.assign(new Error(), { headers: new Headers({ 'retry-after': '0.5' }) }))).toBe(500);
    const now = Date.parse('2026-12-06T10:00:00Z');
    expect(retryAfterMs(failure(503, { 'retry-after': 'Sun, 06 Dec 2026 10:00:07 GMT' }), now)).toBe(7000);
    expect(retryAfterMs(failure(429))).toBeNull();
    expect(retryAfterMs(failure(429, { 'retry-after': 'soon' }))).toBeNull();
  });

  it('counts busy or broken answers and broken connections as passing, refusals as not', () => {
    expect(passingFailure(failure(429))).toBe('the provider answered 429');
    expect(passingFailure(failure(529))).toBe('the provider answered 529');
    expect(passingFailure(failure(400))).toBeNull();
    expect(passingFailure(failure(401))).toBeNull();
    const reset = new TypeError('fetch failed', { cause: Object.assign(new Error('socket'), { code: 'ECONNRESET' }) });
    expect(passingFailure(reset)).toBe('the connection failed (ECONNRESET)');
    expect(passingFailure(new Error('something else'))).toBeNull();
  });

  it('tries again up to the bound, and never after something streamed', async () => {
    const policy = { retries: 2, maxWaitS: 1, baseMs: 1 };
    const signal = new AbortController().signal;
    let tries = 0;
    const retried: number[] = [];
    const always = () => {
      tries++;
      return Promise.reject(failure(503));
    };
    await expect(
      withRetries(policy, { signal, onRetry: (i) => retried.push(i.retry) }, always, () => false),
    ).rejects.toThrow('status 503');
    expect([tries, retried]).toEqual([3, [1, 2]]);

    tries = 0;
    await expect(withRetries(policy, { signal }, always, () => true)).rejects.toThrow('status 503');
    expect(tries).toBe(1);
  });

  it('stops waiting when the call is aborted', async () => {
    const controller = new AbortController();
    const waiting = withRetries(
      { retries: 3, maxWaitS: 60, baseMs: 1 },
      { signal: controller.signal },
      () => Promise.reject(failure(429, { 'retry-after': '30' })),
      () => false,
    );
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow();
  });
});
