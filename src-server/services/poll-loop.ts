/**
 * A process's clock for work the database holds: it takes a step at start and `pollS` seconds after each step ends.
 * It keeps no state of its own, so any number of processes may tick together; the step claims what it does. A step
 * handles its own failures (a database away: the next step tries again).
 */
export class PollLoop {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stepping: Promise<void> | undefined;
  private stopped = false;

  constructor(
    /** One step; `goOn` turns false once the loop is closing, to end a long step between two claims. */
    private readonly step: (goOn: () => boolean) => Promise<void>,
    private readonly pollS: number,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.stepping = this.step(() => !this.stopped).finally(() => {
        this.stepping = undefined;
        this.schedule(this.pollS * 1000);
      });
    }, delayMs);
    // A process with nothing else to do may exit: the next step is not a reason to stay.
    this.timer.unref();
  }

  /** Stops, after the step under way. */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.stepping;
  }
}
