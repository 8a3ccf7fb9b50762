import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src-server/db/pool';
import { llmQueueRepository } from '../../src-server/db/llm-queue.repository';
import { listenForRunNotifications } from '../../src-server/db/run-notifications';
import { initDb } from '../../src-server/db/migrate';
import type { QueueInfo } from '../../src-server/models/model-client';
import { LocalQueue } from '../../src-server/models/local-queue';
import { createTestDatabase, type TestDatabase } from '../helpers/database';
import { until } from '../helpers/until';

/**
 * The queue in PostgreSQL, as every server process on the database shares it. Each LocalQueue here stands
 * for one process (its own owner id and NOTIFY listener) on the same database.
 */
let db: TestDatabase;
let pool: Pool;
const open: { close(): void | Promise<void> }[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url);
  await initDb(pool);
});
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
  await pool.query('DELETE FROM svc_llm_queue');
  await pool.query(`UPDATE svc_llm_queue_stats SET served = 0, timed_out = 0, recent_s = '{}'`);
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

let processes = 0;
/** How many of the queue's notices each process has heard. */
const noticesHeard = new Map<LocalQueue, number>();
async function queueProcess(slots: number, timeoutS = 60, leaseS = 20): Promise<LocalQueue> {
  const queue = new LocalQueue(llmQueueRepository(pool, 15), { slots, timeoutS, owner: `p${++processes}`, leaseS });
  const listener = await listenForRunNotifications(db.url, {
    cancelled: () => undefined,
    eventsStored: () => undefined,
    queueChanged: (granted) => {
      noticesHeard.set(queue, (noticesHeard.get(queue) ?? 0) + 1);
      queue.changed(granted);
    },
    reconnected: () => queue.changed(),
  });
  open.push(queue, listener);
  return queue;
}

const settle = () => new Promise((r) => setTimeout(r, 150));

describe('the local-runtime queue across processes', () => {
  it('grants slots first come first served across processes and tells waiters their position', async () => {
    const [a, b] = [await queueProcess(2), await queueProcess(2)];
    const first = await a.acquire();
    const second = await b.acquire();
    const order: string[] = [];
    const positions: Record<string, number[]> = { c: [], d: [] };
    const c = a
      .acquire({ onQueued: (i) => positions.c!.push(i.position) })
      .then((release) => (order.push('c'), release));
    await until(async () => ((await a.status()).waiting === 1 ? true : undefined));
    const d = b
      .acquire({ onQueued: (i) => positions.d!.push(i.position) })
      .then((release) => (order.push('d'), release));
    await until(async () => ((await a.status()).waiting === 2 ? true : undefined));
    // Each waiter has been told its place before a slot frees (positions are read at most every 250 ms).
    await until(async () => (positions.c!.includes(1) && positions.d!.includes(2) ? true : undefined));
    expect(await a.status()).toMatchObject({ slots: 2, active: 2, waiting: 2 });
    expect(await b.status()).toMatchObject({ active: 2, waiting: 2 });
    first();
    const releaseC = await c;
    expect(order).toEqual(['c']);
    // d, in the other process, moves up to first in line.
    await until(async () => (positions.d!.includes(1) ? true : undefined));
    second();
    (await d)();
    releaseC();
    await settle();
    expect(positions).toEqual({ c: [1], d: [2, 1] });
    expect(await a.status()).toMatchObject({ active: 0, waiting: 0, served: 4 });
  });

  it('times out a waiter with the documented text, counting the whole cluster', async () => {
    const [a, b] = [await queueProcess(1, 0.3), await queueProcess(1, 0.3)];
    const held = await a.acquire();
    const first = b.acquire();
    await settle();
    const second = a.acquire();
    const error = await first.then(
      () => new Error('expected a timeout'),
      (e: Error) => e,
    );
    expect(`${error.name}: ${error.message}`).toBe(
      'TimeoutError: local runtime queue timeout after 0.3s (1 still waiting, 1 active)',
    );
    await expect(second).rejects.toThrow('local runtime queue timeout after 0.3s (0 still waiting, 1 active)');
    expect(await a.status()).toMatchObject({ timed_out: 2, waiting: 0, active: 1 });
    held();
  });

  it('drops a cancelled waiter at once and moves the others up', async () => {
    const queue = await queueProcess(1);
    const held = await queue.acquire();
    const controller = new AbortController();
    const infos: QueueInfo[] = [];
    const cancelled = queue.acquire({ signal: controller.signal });
    await until(async () => ((await queue.status()).waiting === 1 ? true : undefined));
    const next = queue.acquire({ onQueued: (i) => infos.push(i) });
    await until(async () => (infos.some((i) => i.position === 2) ? true : undefined));
    controller.abort(new Error('run cancelled'));
    await expect(cancelled).rejects.toThrow('run cancelled');
    await until(async () => (infos.some((i) => i.position === 1) ? true : undefined));
    expect((await queue.status()).waiting).toBe(1);
    expect(infos.map((i) => i.position)).toEqual([2, 1]);
    held();
    (await next)();
  });

  it('shares slots round robin between tenants, first come first served within one', async () => {
    const queue = await queueProcess(1);
    const held = await queue.acquire({ tenant: 'busy' });
    const order: string[] = [];
    const waiting: Promise<void>[] = [];
    for (const name of ['busy-1', 'busy-2', 'busy-3', 'quiet-1']) {
      waiting.push(
        queue.acquire({ tenant: name.split('-')[0] }).then((release) => {
          order.push(name);
          release();
        }),
      );
      // One after the other, so their tickets are in this order.
      await until(async () => (await queue.status()).waiting === waiting.length || undefined);
    }
    held();
    await Promise.all(waiting);
    // The quiet tenant came last, but the busy one was just served: the quiet one goes next, not behind
    // every call the busy one has queued.
    expect(order).toEqual(['quiet-1', 'busy-1', 'busy-2', 'busy-3']);
  });

  it("hands a run's slot on to its next call while nobody waits, without a new ticket, and counts both calls", async () => {
    const queue = await queueProcess(1);
    const tickets = async () => (await pool.query<{ ticket: string }>('SELECT ticket FROM svc_llm_queue')).rows;
    const first = await queue.acquire({ holder: 'run-1' });
    const [held] = await tickets();
    await first();
    const second = await queue.acquire({ holder: 'run-1' });
    expect(await tickets()).toEqual([held]);
    await second();
    // The slot kept for a third call that never comes goes back by itself, with both calls counted.
    await until(async () => {
      const status = await queue.status();
      return status.active === 0 && status.served === 2 ? true : undefined;
    });
    expect(await tickets()).toEqual([]);
  });

  it('gives a kept slot back as soon as its run stops, before the stop is announced', async () => {
    const queue = await queueProcess(1, 60);
    await (
      await queue.acquire({ holder: 'run-1' })
    )();
    expect((await queue.status()).active).toBe(1);
    // A run at a gate or its end lets go: the slot is the queue's again when letGo resolves, not a lease later.
    await queue.letGo('run-1');
    const rows = await pool.query<{ ticket: string }>('SELECT ticket FROM svc_llm_queue');
    expect(rows.rows).toEqual([]);
    expect(await queue.status()).toMatchObject({ active: 0, served: 1 });
  });

  it("reserves a slot for a run's first call while nobody waits: the call takes it on; unused, it counts for nothing", async () => {
    const queue = await queueProcess(2, 60);
    const tickets = async () => (await pool.query<{ ticket: string }>('SELECT ticket FROM svc_llm_queue')).rows;
    queue.reserve('run-1', '');
    const call = await queue.acquire({ holder: 'run-1' });
    const [reserved] = await tickets();
    expect(reserved).toBeDefined();
    await call();
    await queue.letGo('run-1');
    expect(await tickets()).toEqual([]);
    expect(await queue.status()).toMatchObject({ active: 0, served: 1 });

    // A reservation its run never used: given back when the run stops, with no call counted.
    queue.reserve('run-2', '');
    await until(async () => ((await tickets()).length === 1 ? true : undefined));
    await queue.letGo('run-2');
    expect(await tickets()).toEqual([]);
    expect(await queue.status()).toMatchObject({ active: 0, served: 1 });
  });

  it('never puts a reservation ahead of whoever waits: it queues behind them and is dropped, counting nothing', async () => {
    const [a, b] = [await queueProcess(1, 60), await queueProcess(1, 60)];
    const first = await a.acquire({ label: 'busy' });
    const waiting = b.acquire({ label: 'waiting' });
    await until(async () => ((await b.status()).waiting === 1 ? true : undefined));
    // A reservation now finds the one slot taken and a waiter before it.
    await until(async () => ((await a.status()).waiting === 1 ? true : undefined));
    a.reserve('run-3', '');
    await first();
    await (
      await waiting
    )();
    await a.letGo('run-3');
    expect(await a.status()).toMatchObject({ active: 0, waiting: 0, served: 2 });
  });

  it('gives a kept slot back to whoever waits, ahead of the next call of the run that kept it', async () => {
    const [a, b] = [await queueProcess(1), await queueProcess(1)];
    const order: string[] = [];
    await (
      await a.acquire({ holder: 'run-1' })
    )();
    // Another process asks for the one slot while run-1 keeps it for its next call.
    const other = b.acquire({ holder: 'run-2' }).then((release) => (order.push('run-2'), release()));
    // The next call comes once run-1's process has heard that someone waits (a call in the moment before the notice
    // arrives takes its kept slot on, as it would with nobody waiting).
    await until(async () => ((noticesHeard.get(a) ?? 0) > 0 || order.length > 0 ? true : undefined));
    const next = a.acquire({ holder: 'run-1' }).then((release) => (order.push('run-1'), release()));
    await Promise.all([other, next]);
    expect(order).toEqual(['run-2', 'run-1']);
  });

  it('gives a dead process’s slots back once its tickets lapse', async () => {
    const live = await queueProcess(1, 60);
    // A process died holding the one slot: its ticket is granted, and nobody renews it any more.
    await pool.query(
      `INSERT INTO svc_llm_queue (owner_id, tenant, label, granted_at, lease_until)
       VALUES ('a-dead-process', '', 'a call', now(), now() + interval '500 milliseconds')`,
    );
    const started = Date.now();
    const release = await live.acquire();
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(Date.now() - started).toBeLessThan(5000);
    release();
  });

  it('gives back a slot whose release PostgreSQL forgot, though its process lives on and renews its own tickets', async () => {
    // The queue's changes are committed without waiting for the disk: a crash of PostgreSQL may forget a release.
    const live = await queueProcess(1, 8, 1);
    const owner = `p${processes}`;
    await pool.query(
      `INSERT INTO svc_llm_queue (owner_id, tenant, label, granted_at, lease_until)
       VALUES ($1, '', 'a call released long ago', now(), now() + interval '1 second')`,
      [owner],
    );
    // The process renews only the tickets it waits with or holds, every quarter second here: not that one.
    const started = Date.now();
    const release = await live.acquire();
    expect(Date.now() - started).toBeLessThan(5000);
    release();
  });

  it('reset forgets held slots and counters; waiters get the slots, and late releases count for nothing', async () => {
    const queue = await queueProcess(1);
    const old = await queue.acquire();
    const waiting = queue.acquire();
    await settle();
    expect((await queue.reset('stale slot')).served).toBe(0);
    const granted = await waiting;
    old();
    await settle();
    expect(await queue.status()).toMatchObject({ active: 1, waiting: 0, served: 0 });
    granted();
    await settle();
    expect(await queue.status()).toMatchObject({ active: 0, served: 1 });
  });

  it('estimates the wait from recent call durations', async () => {
    const queue = await queueProcess(1);
    const release = await queue.acquire();
    await new Promise((r) => setTimeout(r, 300));
    release();
    await until(async () => ((await queue.status()).served === 1 ? true : undefined));
    const held = await queue.acquire();
    const infos: QueueInfo[] = [];
    const a = queue.acquire({ onQueued: (i) => infos.push(i) });
    await until(async () => ((await queue.status()).waiting === 1 ? true : undefined));
    const b = queue.acquire({ onQueued: (i) => infos.push(i) });
    await until(async () => (infos.some((i) => i.position === 2) ? true : undefined));
    const byPosition = Object.fromEntries(infos.map((i) => [i.position, i.estimated_wait_s]));
    expect(byPosition[1]).toBeGreaterThanOrEqual(0.3);
    expect(byPosition[2]).toBeGreaterThanOrEqual(0.6);
    held();
    (await a)();
    (await b)();
  });

  it('counts the load of a model that is not loaded in the estimated wait', async () => {
    const queue = await queueProcess(1);
    const held = await queue.acquire();
    const warm: QueueInfo[] = [];
    const cold: QueueInfo[] = [];
    const a = queue.acquire({ onQueued: (i) => warm.push(i) });
    const b = queue.acquire({ onQueued: (i) => cold.push(i), loadS: 12 });
    await until(async () => (warm.length && cold.length ? true : undefined));
    // Whatever the place in line, the cold call's model must be loaded first: its estimate is 12 s longer than its
    // place alone gives. The two are one place apart, one call (20 s, assumed before any call has finished).
    const [w, c] = [warm.at(-1)!, cold.at(-1)!];
    expect(c.estimated_wait_s - 12 - w.estimated_wait_s).toBeCloseTo(20 * (c.position - w.position), 0);
    held();
    // Either may be first in line: each frees its slot once it has it.
    await Promise.all([a, b].map(async (slot) => (await slot)()));
  });
});
