import type { LoggedEvent } from './logged-event';

/**
 * Where events pushed by a run's leg or its store reader wait for one reader to take them, in order. A reader that
 * falls behind does not hold the run back: its events wait here until it takes them, and the reader's own writer
 * bounds how long that may be (http/sse.ts drops a client that stops reading).
 */
export class Inbox {
  private queued: LoggedEvent[] = [];
  private wake?: () => void;
  private over = false;
  /** The last event handed out, or the reader's Last-Event-ID: nothing at or before it is queued again. */
  cursor: number;

  constructor(cursor: number) {
    this.cursor = cursor;
  }

  get ended(): boolean {
    return this.over;
  }

  /** Queues the events this reader has not had yet, in order. */
  push(events: readonly LoggedEvent[]): void {
    for (const event of events) {
      if (event.id <= this.cursor || this.over) continue;
      this.queued.push(event);
      this.cursor = event.id;
    }
    if (this.queued.length) this.poke();
  }

  /** No more events will come (or the reader left). */
  end(): void {
    this.over = true;
    this.poke();
  }

  /** Wakes a reader waiting in take() without events: it looks again where its events come from. */
  poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** What is queued now, without waiting: what a source handed over before it went away. */
  drain(): LoggedEvent[] {
    const taken = this.queued;
    this.queued = [];
    return taken;
  }

  /** What is queued, or, when nothing is, waits for a push, an end or a poke (then it is empty). */
  async take(signal?: AbortSignal): Promise<LoggedEvent[]> {
    if (this.queued.length === 0 && !this.over && !signal?.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          signal?.removeEventListener('abort', done);
          resolve();
        };
        this.wake = done;
        signal?.addEventListener('abort', done, { once: true });
      });
    }
    return this.drain();
  }
}
