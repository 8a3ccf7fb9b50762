import type { QueueStatus } from '../contracts/models';
import type { QueueInfo } from './model-client';
import { getLogger } from '../log';

const log = getLogger('svc.models');

/** Named so that `${name}: ${message}` is the documented queue timeout text. */
export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

interface Waiter {
  grant(release: () => void): void;
  refuse(error: unknown): void;
  onQueued?: (info: QueueInfo) => void;
  position: number;
}

const RECENT_CALLS = 20;

function seconds(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(3)));
}

/**
 * At most `slots` local-runtime calls at once, first come first served. A waiter leaves at once when
 * its run is cancelled or when it has waited `timeoutS`. Counters live in this process only: a reset
 * starts a new generation, and releases from an older generation no longer touch the counters.
 */
export class LocalQueue {
  private active = 0;
  private readonly waiters: Waiter[] = [];
  private served = 0;
  private timedOut = 0;
  private readonly durations: number[] = [];
  private generation = 0;

  constructor(
    readonly slots: number,
    private readonly timeoutS: number,
    private readonly runtime = 'local runtime',
  ) {}

  /** Resolves with the function that frees the slot; rejects on timeout or abort. */
  acquire(
    options: { signal?: AbortSignal; onQueued?: (info: QueueInfo) => void; label?: string } = {},
  ): Promise<() => void> {
    options.signal?.throwIfAborted();
    const label = options.label ?? 'a call';
    if (this.active < this.slots && this.waiters.length === 0) return Promise.resolve(this.take());
    const queuedAt = performance.now();
    if (log.enabled('DEBUG')) log.debug(`queue: ${label} waits at position ${this.waiters.length + 1}`);
    return new Promise((resolve, reject) => {
      const leave = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.announcePositions();
      };
      const onAbort = () => {
        leave();
        reject(options.signal!.reason);
      };
      const timer = setTimeout(() => {
        leave();
        this.timedOut++;
        reject(
          new TimeoutError(
            `${this.runtime} queue timeout after ${seconds(this.timeoutS)}s (${this.waiters.length} still waiting, ${this.active} active)`,
          ),
        );
      }, this.timeoutS * 1000);
      const waiter: Waiter = {
        position: 0,
        onQueued: options.onQueued,
        grant: (release) => {
          if (log.enabled('DEBUG'))
            log.debug(`queue: ${label} got a slot after ${Math.round(performance.now() - queuedAt)} ms`);
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        refuse: reject,
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.announcePositions();
    });
  }

  status(): QueueStatus {
    return {
      runtime: this.runtime,
      slots: this.slots,
      active: this.active,
      waiting: this.waiters.length,
      served: this.served,
      timed_out: this.timedOut,
      average_call_s: this.averageCallS(),
    };
  }

  /** Clears stale in-memory counters (a slot leaked by a crashed call, say); waiters keep their place. */
  reset(reason: string): QueueStatus {
    log.warn(`queue reset (${reason || 'no reason given'}): was ${JSON.stringify(this.status())}`);
    this.generation++;
    this.active = 0;
    this.served = 0;
    this.timedOut = 0;
    this.durations.length = 0;
    this.dispatch();
    return this.status();
  }

  private take(): () => void {
    this.active++;
    const generation = this.generation;
    const started = performance.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (generation !== this.generation) return;
      this.active = Math.max(0, this.active - 1);
      this.served++;
      this.durations.push((performance.now() - started) / 1000);
      if (this.durations.length > RECENT_CALLS) this.durations.shift();
      this.dispatch();
    };
  }

  private dispatch(): void {
    while (this.active < this.slots && this.waiters.length > 0) this.waiters.shift()!.grant(this.take());
    this.announcePositions();
  }

  private averageCallS(): number | null {
    if (this.durations.length === 0) return null;
    return Number((this.durations.reduce((a, b) => a + b, 0) / this.durations.length).toFixed(3));
  }

  /** Tells each waiter its place whenever it changes, with a wait estimated from recent calls. */
  private announcePositions(): void {
    const average = this.averageCallS() ?? 0;
    this.waiters.forEach((waiter, index) => {
      const position = index + 1;
      if (waiter.position === position) return;
      waiter.position = position;
      waiter.onQueued?.({
        position,
        waiting: this.waiters.length,
        active: this.active,
        estimated_wait_s: Number((average * Math.ceil(position / this.slots)).toFixed(1)),
      });
    });
  }
}
