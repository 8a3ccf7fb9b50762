import { describe, expect, it } from 'vitest';
import { getLogger } from '../log';
import { BatchWriter } from './batch-writer';
import { retryTransient } from '../storage/retry';

const log = getLogger('svc.test');
const unavailable = () => Object.assign(new Error('Connection terminated'), { transient: true });
const isTransient = (error: unknown) => (error as { transient?: boolean }).transient === true;
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const writerOf = (write: (items: number[]) => Promise<void>) =>
  new BatchWriter<number>({ what: 'run events', maxBatch: 100, isTransient, log, write });

describe('the shared writer of a process: a busy database is waited for, an absent one for a while', () => {
  it('a flush waits for a slow write past its bound: slowness under load is back-pressure, not a failure', async () => {
    const stored: number[][] = [];
    const writer = writerOf(async (items) => {
      await delay(300);
      stored.push(items);
    });
    writer.push(1);
    writer.push(2);
    await expect(writer.flush(100)).resolves.toBeUndefined();
    expect(stored.flat()).toEqual([1, 2]);
  });

  it('a flush gives up once the writes have been failing for its bound, and the items are still stored later', async () => {
    let failUntil = Date.now() + 400;
    const stored: number[] = [];
    const writer = writerOf(async (items) => {
      if (Date.now() < failUntil) throw unavailable();
      stored.push(...items);
    });
    writer.push(1);
    const started = Date.now();
    await expect(writer.flush(150)).rejects.toThrow('run events could not be stored for 0.15s');
    expect(Date.now() - started).toBeLessThan(400);
    failUntil = 0;
    await writer.flush();
    expect(stored).toEqual([1]);
  });

  it('a retried write counts its bound from its first failure, not from a first attempt that only waited', async () => {
    let attempts = 0;
    const result = await retryTransient(
      async () => {
        attempts++;
        if (attempts === 1) {
          await delay(250); // waited for a free connection longer than the bound, then lost it
          throw unavailable();
        }
        if (attempts === 2) throw unavailable();
        return 'stored';
      },
      { isTransient, log, what: 'a checkpoint', giveUpAfterMs: 200 },
    );
    expect(result).toBe('stored');
    expect(attempts).toBe(3);
    await expect(
      retryTransient(
        async () => {
          throw unavailable();
        },
        { isTransient, log, what: 'a checkpoint', giveUpAfterMs: 120 },
      ),
    ).rejects.toThrow('Connection terminated');
  });
});
