import type { Migration } from './migration';

/**
 * The run a thread stands at (the one running or waiting for a decision), found without reading its finished runs:
 * the thread list shows it ahead of a run queued behind it, and a thread a schedule continues holds thousands of runs.
 */
export const activeRunsByThread: Migration = {
  name: '0004_active_runs_by_thread',
  // An index: the release before neither needs nor minds it.
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_runs_active_by_thread ON svc_runs (thread_id, started_at DESC)
        WHERE status IN ('running', 'waiting_approval')`,
    );
  },
};
