import { describe, expect, it } from 'vitest';
import type { QueueInfo } from './model-client';
import { LocalQueue } from './local-queue';

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('LocalQueue', () => {
  it('grants slots first come first served and tells waiters their position', async () => {
    const queue = new LocalQueue(2, 60);
    const a = await queue.acquire();
    const b = await queue.acquire();
    const order: string[] = [];
    const positions: Record<string, number[]> = { c: [], d: [] };
    const c = queue
      .acquire({ onQueued: (i) => positions.c!.push(i.position) })
      .then((release) => (order.push('c'), release));
    const d = queue
      .acquire({ onQueued: (i) => positions.d!.push(i.position) })
      .then((release) => (order.push('d'), release));
    await tick();
    expect(queue.status()).toMatchObject({ slots: 2, active: 2, waiting: 2 });
    a();
    const releaseC = await c;
    expect(order).toEqual(['c']);
    expect(positions).toEqual({ c: [1], d: [2, 1] });
    b();
    (await d)();
    releaseC();
    expect(queue.status()).toMatchObject({ active: 0, waiting: 0, served: 4 });
  });

  it('times out a waiter with the documented text and counts it', async () => {
    const queue = new LocalQueue(1, 0.05);
    const held = await queue.acquire();
    const first = queue.acquire();
    const second = queue.acquire();
    await expect(first).rejects.toThrow('local runtime queue timeout after 0.05s (1 still waiting, 1 active)');
    const error = await second.then(
      () => new Error('expected a timeout'),
      (e: Error) => e,
    );
    expect(`${error.name}: ${error.message}`).toBe(
      'TimeoutError: local runtime queue timeout after 0.05s (0 still waiting, 1 active)',
    );
    expect(queue.status()).toMatchObject({ timed_out: 2, waiting: 0, active: 1 });
    held();
  });

  it('drops a cancelled waiter at once and moves the others up', async () => {
    const queue = new LocalQueue(1, 60);
    const held = await queue.acquire();
    const controller = new AbortController();
    const infos: QueueInfo[] = [];
    const cancelled = queue.acquire({ signal: controller.signal });
    const next = queue.acquire({ onQueued: (i) => infos.push(i) });
    await tick();
    controller.abort(new Error('run cancelled'));
    await expect(cancelled).rejects.toThrow('run cancelled');
    expect(queue.status().waiting).toBe(1);
    expect(infos.map((i) => i.position)).toEqual([2, 1]);
    held();
    (await next)();
  });

  it('resets counters without going below zero when older calls finish, and keeps every waiter', async () => {
    const queue = new LocalQueue(1, 60);
    const old = await queue.acquire();
    const waiting = queue.acquire();
    await tick();
    expect(queue.reset('stale slot').active).toBe(1);
    const granted = await waiting;
    old();
    old();
    expect(queue.status()).toMatchObject({ active: 1, waiting: 0 });
    granted();
    expect(queue.status()).toMatchObject({ active: 0, served: 1 });
  });

  it('estimates the wait from recent call durations', async () => {
    const queue = new LocalQueue(1, 60);
    const release = await queue.acquire();
    await new Promise((r) => setTimeout(r, 120));
    release();
    const held = await queue.acquire();
    const infos: QueueInfo[] = [];
    const next = queue.acquire({ onQueued: (i) => infos.push(i) });
    await tick();
    expect(infos[0]!.estimated_wait_s).toBeGreaterThanOrEqual(0.1);
    held();
    (await next)();
  });
});
