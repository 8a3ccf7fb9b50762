/**
 * A time limit that stops counting while a person is being asked something: a tool call's and a run's leg's limits
 * measure the work, not the minutes someone takes to answer a tool server's question
 * (docs/approvals.md#questions-from-tool-servers). Pauses nest: the clock runs again when the last one ends.
 */
export class PausableTimer {
  private remainingMs: number;
  private startedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private paused = 0;
  private done = false;

  constructor(
    limitMs: number,
    private readonly onExpire: () => void,
  ) {
    this.remainingMs = limitMs;
    this.run();
  }

  /** Stops the clock until the returned function is called (once). */
  pause(): () => void {
    if (this.done) return () => {};
    if (this.paused++ === 0) {
      clearTimeout(this.timer);
      this.remainingMs -= performance.now() - this.startedAt;
    }
    let resumed = false;
    return () => {
      if (resumed) return;
      resumed = true;
      if (--this.paused === 0 && !this.done) this.run();
    };
  }

  clear(): void {
    this.done = true;
    clearTimeout(this.timer);
  }

  private run(): void {
    this.startedAt = performance.now();
    this.timer = setTimeout(
      () => {
        this.done = true;
        this.onExpire();
      },
      Math.max(0, this.remainingMs),
    );
  }
}
