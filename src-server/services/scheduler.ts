import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';
import type { SchedulesService } from './schedules.service';

const log = getLogger('svc.schedules');

/**
 * Each process's clock for schedules: at start and every `pollS` seconds it fires what is due. It holds no timer per
 * schedule and no state of its own: the database says what is due, and a row per occurrence says who fires it, so
 * any number of processes may tick together and each occurrence still runs once.
 */
export class Scheduler {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly schedules: Pick<SchedulesService, 'fireDue'>,
    private readonly pollS: number,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        this.schedule(this.pollS * 1000);
      });
    }, delayMs);
    // A process with nothing else to do may exit: the next tick is not a reason to stay.
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      // Stopping ends a long tick between two claims rather than after the last.
      await this.schedules.fireDue(() => !this.stopped);
    } catch (error) {
      // The database away, most likely: the next tick tries again, and what was due is still due then.
      log.warn(`firing due schedules failed: ${errorMessage(error)}`);
    }
  }

  /** Stops ticking, after the fires under way (their runs are started, and how it went recorded). */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
  }
}
