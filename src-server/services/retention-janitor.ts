import { errorMessage } from '../contracts/errors';
import type { RetentionRepository } from '../db/retention.repository';
import type { Logger } from '../log';

/** The janitor's row in svc_janitor_passes. */
export const RETENTION_JOB = 'retention';

/** Threads one transaction deletes or prunes: a pass holds their rows' locks only this long at a time. */
const BATCH = 50;

export interface JanitorOptions {
  /** This process, as the claimant of a pass. */
  owner: string;
  /** RETENTION_INTERVAL_S: how often a pass runs across the cluster. */
  intervalS: number;
  /** RETENTION_PRUNE_AFTER_HOURS. */
  pruneAfterHours: number;
  log: Logger;
}

export interface PassResult {
  /** false: another process had claimed this interval's pass, and this one did nothing. */
  ran: boolean;
  threadsDeleted: number;
  /** Threads of the LangGraph API that never had a run (docs/langgraph-api.md), deleted as old finished ones are. */
  draftsDeleted: number;
  threadsPruned: number;
  checkpointsDeleted: number;
}

/**
 * Retention's janitor (docs/retention.md). Every process runs the timer; each interval, one process across the
 * cluster claims the pass (a row in svc_janitor_passes) and does it, in batches of BATCH threads, each batch in a
 * transaction of its own: first the threads of projects that keep finished threads for a number of days, then the
 * checkpoints of the threads of projects that prune them.
 */
export class RetentionJanitor {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<PassResult> | undefined;

  constructor(
    private readonly retention: RetentionRepository,
    private readonly options: JanitorOptions,
  ) {}

  /** Offers a pass now and then every interval. */
  start(): void {
    const tick = () => {
      this.pass().catch((error) => this.options.log.warn(`retention pass failed: ${errorMessage(error)}`));
    };
    tick();
    this.timer = setInterval(tick, this.options.intervalS * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One pass if this process claims this interval's; one at a time in a process. */
  pass(): Promise<PassResult> {
    this.running ??= this.claimAndRun().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async claimAndRun(): Promise<PassResult> {
    const { owner, intervalS, pruneAfterHours, log } = this.options;
    const result: PassResult = {
      ran: false,
      threadsDeleted: 0,
      draftsDeleted: 0,
      threadsPruned: 0,
      checkpointsDeleted: 0,
    };
    if (!(await this.retention.claimPass(RETENTION_JOB, intervalS, owner))) return result;
    result.ran = true;
    for (;;) {
      const deleted = await this.retention.expireBatch(BATCH);
      if (deleted.threads > 0) {
        result.threadsDeleted += deleted.threads;
        log.info(
          `retention deleted ${deleted.threads} finished thread(s) past their project's keep time, with ` +
            `${deleted.runs} run(s), ${deleted.events} event(s), ${deleted.decisions} decision record(s) and ` +
            `${deleted.checkpoints} checkpoint(s)`,
        );
      }
      if (deleted.threads < BATCH) break;
    }
    for (;;) {
      const drafts = await this.retention.expireDrafts(BATCH);
      result.draftsDeleted += drafts;
      if (drafts < BATCH) break;
    }
    if (result.draftsDeleted > 0) {
      log.info(
        `retention deleted ${result.draftsDeleted} thread(s) that never had a run, untouched past their project's keep time`,
      );
    }
    for (;;) {
      const pruned = await this.retention.pruneBatch(BATCH, pruneAfterHours);
      for (const thread of pruned) {
        result.threadsPruned += 1;
        result.checkpointsDeleted += thread.checkpoints;
        if (thread.checkpoints > 0) {
          log.info(
            `retention pruned thread ${thread.threadId}: ${thread.checkpoints} checkpoint(s), ${thread.blobs} blob(s) ` +
              `and ${thread.writes} write(s) deleted, ${thread.kept} checkpoint(s) kept`,
          );
        }
      }
      if (pruned.length < BATCH) break;
    }
    await this.retention.finishPass(RETENTION_JOB, owner);
    return result;
  }
}
