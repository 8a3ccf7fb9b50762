/**
 * How many legs of runs this process executes at once. Past the limit a leg waits here, first come first served, and
 * its stream says so (`server_queue`): it waits for the server, not for the model. A run never fails for the
 * server's own resources when the limits a user set allow it to run; it waits.
 */
export class Admission {
  private running = 0;
  private readonly waiting: { admit(): void; moved(position: number): void }[] = [];

  constructor(private readonly limit: number) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Resolves with the function that gives the place back, once the leg may run; `onWait` hears its position (1 =
   * next) when it must wait, and again whenever the position changes. Rejects when `signal` aborts first.
   */
  async enter(onWait: (position: number, running: number) => void, signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.running < this.limit && this.waiting.length === 0) return this.take();
    return new Promise((resolve, reject) => {
      const waiter = {
        admit: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.take());
        },
        moved: (position: number) => onWait(position, this.running),
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        this.announce(at);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
      onWait(this.waiting.length, this.running);
    });
  }

  private take(): () => void {
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const next = this.waiting.shift();
      next?.admit();
      this.announce(0);
    };
  }

  /** Tells the waiters from `from` on their new positions. */
  private announce(from: number): void {
    for (let i = Math.max(0, from); i < this.waiting.length; i++) this.waiting[i]!.moved(i + 1);
  }
}
