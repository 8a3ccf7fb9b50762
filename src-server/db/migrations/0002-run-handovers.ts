import type { Migration } from './migration';

/**
 * How many of a run's takeovers followed a clean stop of its process (a shutdown hands its runs over): those are not
 * counted against RUN_MAX_ATTEMPTS, so that an upgrade replacing a cluster's processes one at a time gives up no run,
 * while `attempts` still counts every execution (run_resumed's `attempt`). Reset with `attempts` when a run resumes
 * after a gate or leaves its thread's queue.
 */
export const runHandovers: Migration = {
  name: '0002_run_handovers',
  // A new column with a default: the release before writes its runs without knowing it.
  compatible: true,
  async up(client) {
    await client.query(`ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS handovers integer NOT NULL DEFAULT 0`);
  },
};
