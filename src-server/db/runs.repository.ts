import type { Pool } from './pool';

export const ORPHAN_AGE_S = 3600;

/**
 * SPEC's startup sweep: a run still `running` after an hour was orphaned by a crash (no run outlives
 * the run timeout), so it and its open nodes are closed as `error`. Returns how many runs were closed.
 */
export async function sweepOrphanedRuns(pool: Pool, olderThanS = ORPHAN_AGE_S): Promise<number> {
  const result = await pool.query<{ id: string }>(
    `WITH swept AS (
       UPDATE svc_runs
          SET status = 'error',
              error_detail = COALESCE(error_detail, 'OrphanedRunError: the server stopped while this run was running'),
              finished_at = now()
        WHERE status = 'running' AND started_at < now() - make_interval(secs => $1)
        RETURNING id
     ), closed AS (
       UPDATE svc_run_nodes
          SET status = 'error', exited_at = extract(epoch FROM now())
        WHERE exited_at IS NULL AND run_id IN (SELECT id FROM swept)
     )
     SELECT id FROM swept`,
    [olderThanS],
  );
  return result.rowCount ?? 0;
}
