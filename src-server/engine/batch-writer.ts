import { errorMessage } from '../contracts/errors';
import type { Logger } from '../log';
import { sleep, type IsTransient } from '../storage/retry';

export interface BatchWriterOptions<T> {
  /** Writes a batch in one statement; must be safe to repeat (idempotent on the items' keys). */
  write(items: T[]): Promise<void>;
  isTransient: IsTransient;
  log: Logger;
  /** What the items are, for log lines ("run events", "node rows"). */
  what: string;
  /** The most items one statement takes. */
  maxBatch: number;
  /** Told of the items of each batch once they are stored (or dropped). */
  onWritten?(items: T[]): void;
}

const BACKOFF_MS = [50, 100, 200, 500, 1000, 2000];

/**
 * Writes the items of every run of this process in shared statements, as PostgreSQL commits groups: when nothing is
 * being written, what arrived in this turn of the event loop goes at once (no delay at low load); while a write is
 * under way, arrivals wait and go together in the next. So the number of statements follows the database's pace, not
 * the number of runs, and no run holds a connection of its own.
 *
 * A write that fails for a transient reason (the database restarting or unreachable) is tried again, and
 * whatever arrived meanwhile waits behind it: nothing is lost while the process lives. An error that is not transient
 * (an item the database refuses) is narrowed down to the one item, which alone is dropped, with its reason logged.
 */
export class BatchWriter<T> {
  private pending: T[] = [];
  private writing?: Promise<void>;
  private scheduled = false;
  private closed = false;
  /** The flush() callers waiting for the items before them; `withinMs` bounds how long they bear failing writes. */
  private waiters: { upTo: number; resolve(): void; reject(error: Error): void; withinMs?: number }[] = [];
  private pushed = 0;
  private written = 0;
  private failures = 0;
  /** When the writes began to fail, while they fail; a write that succeeds ends the streak. */
  private failingSince?: number;

  constructor(private readonly options: BatchWriterOptions<T>) {}

  push(item: T): void {
    this.pending.push(item);
    this.pushed++;
    this.schedule();
  }

  /**
   * Resolves once every item pushed so far is stored (at once when none waits). With `withinMs`, rejects once the
   * writes have been failing that long (the database away for longer than a run waits for it); the items are still
   * written later. A backlog that is only slow to drain (a busy database, a busy process) is waited for: it is
   * back-pressure, not a failure.
   */
  flush(withinMs?: number): Promise<void> {
    if (this.written >= this.pushed) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ upTo: this.pushed, resolve, reject, withinMs });
      this.schedule();
    });
  }

  /** Stores what is pending, then takes no more writes (later pushes stay unwritten). */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private schedule(): void {
    if (this.scheduled || this.writing || this.closed) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.writing || this.pending.length === 0) return;
    this.writing = (async () => {
      while (this.pending.length > 0) {
        const taken = this.pending.splice(0, this.options.maxBatch);
        await this.store(taken);
        this.written += taken.length;
        this.options.onWritten?.(taken);
        this.release();
      }
    })();
    try {
      await this.writing;
    } finally {
      this.writing = undefined;
    }
    if (this.pending.length > 0) this.schedule();
  }

  private async store(items: T[]): Promise<void> {
    for (;;) {
      try {
        await this.options.write(items);
        this.failures = 0;
        this.failingSince = undefined;
        return;
      } catch (error) {
        if (!this.options.isTransient(error)) return this.storeApart(items, error);
        this.failures++;
        this.failingSince ??= Date.now();
        this.giveUpWaiters();
        if (this.failures === 1 || this.failures % 20 === 0) {
          this.options.log.warn(
            `storing ${items.length} ${this.options.what} failed, trying again: ${errorMessage(error)}`,
          );
        }
        await sleep(BACKOFF_MS[Math.min(this.failures - 1, BACKOFF_MS.length - 1)]!);
      }
    }
  }

  /** A batch the database refused: halves are tried on their own, until the item it refuses is found and dropped. */
  private async storeApart(items: T[], error: unknown): Promise<void> {
    if (items.length === 1) {
      this.options.log.error(`dropping one of the ${this.options.what}: the database refused it`, error);
      return;
    }
    const half = Math.ceil(items.length / 2);
    await this.store(items.slice(0, half));
    await this.store(items.slice(half));
  }

  /** Rejects the flush() callers that bear failing writes no longer than they have now been failing. */
  private giveUpWaiters(): void {
    const failingFor = Date.now() - this.failingSince!;
    const late = this.waiters.filter((w) => w.withinMs !== undefined && failingFor >= w.withinMs);
    if (late.length === 0) return;
    this.waiters = this.waiters.filter((w) => !late.includes(w));
    for (const waiter of late) {
      waiter.reject(new Error(`${this.options.what} could not be stored for ${waiter.withinMs! / 1000}s`));
    }
  }

  private release(): void {
    const due = this.waiters.filter((w) => w.upTo <= this.written);
    this.waiters = this.waiters.filter((w) => w.upTo > this.written);
    for (const waiter of due) waiter.resolve();
  }
}
