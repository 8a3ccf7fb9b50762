import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';
import { PollLoop } from './poll-loop';
import type { SchedulesService } from './schedules.service';

const log = getLogger('svc.schedules');

/**
 * Each process's clock for schedules: at start and every `pollS` seconds it fires what is due. It holds no timer per
 * schedule and no state of its own: the database says what is due, and a row per occurrence says who fires it, so
 * any number of processes may tick together and each occurrence still runs once.
 */
export class Scheduler extends PollLoop {
  constructor(schedules: Pick<SchedulesService, 'fireDue'>, pollS: number) {
    super(async (goOn) => {
      try {
        // Stopping ends a long tick between two claims rather than after the last.
        await schedules.fireDue(goOn);
      } catch (error) {
        // The database away, most likely: the next tick tries again, and what was due is still due then.
        log.warn(`firing due schedules failed: ${errorMessage(error)}`);
      }
    }, pollS);
  }
}
