import type pg from 'pg';
import { FINISHED_RUN_STATUSES } from '../contracts/runs';
import type { ProjectRetention, RetentionSettings } from '../contracts/retention';
import { deleteCheckpoints, type DeletedCheckpoints } from './checkpoint-removal';
import { CHECKPOINT_TABLES as cp } from './checkpointer';
import { withTransaction, type Pool } from './pool';

export type { DeletedCheckpoints };

/**
 * When a thread is in use, and retention must not touch it: each entry a SQL predicate on `t` (svc_threads) that
 * holds while it is. A run counts as going on unless its status is a finished one, so that a status added later
 * (say, a queued run) keeps its thread too. A schedule that continues a thread keeps it too.
 */
const THREAD_IN_USE = [
  `EXISTS (SELECT 1 FROM svc_runs r WHERE r.thread_id = t.id
             AND r.status NOT IN (${FINISHED_RUN_STATUSES.map((s) => `'${s}'`).join(', ')}))`,
  // A schedule that continues the thread (docs/schedules.md), paused or not: its next fire needs it.
  `EXISTS (SELECT 1 FROM svc_schedules s WHERE s.thread_id = t.id)`,
];
const NOT_IN_USE = THREAD_IN_USE.map((predicate) => `NOT ${predicate}`).join(' AND ');

/**
 * When the thread was last active: its last run's end (or start, for a run that recorded none), or its own update; an
 * imported thread, at the latest when it was imported (GREATEST ignores a NULL).
 */
const LAST_ACTIVE = `GREATEST(t.updated_at, t.imported_at, (SELECT max(COALESCE(r.finished_at, r.started_at)) FROM svc_runs r
                                                            WHERE r.thread_id = t.id))`;

export interface DeletedThreads extends DeletedCheckpoints {
  threads: number;
  runs: number;
  events: number;
  decisions: number;
}

export interface PrunedThread extends DeletedCheckpoints {
  threadId: string;
  kept: number;
}

interface SettingsRow {
  keep_finished_threads_days: number | null;
  prune_checkpoints: boolean;
  updated_at: Date | null;
}

/**
 * Retention's SQL (docs/retention.md): the projects' settings, the checkpoints of a thread deleted with the blobs and
 * writes nothing kept refers to, and the janitor's passes over threads, in batches, each in a transaction of its own.
 */
export function retentionRepository(pool: Pool) {
  /** Deletes whole threads (locked by the caller's transaction): their checkpoints, then their rows, which cascade. */
  async function deleteThreadsIn(client: pg.PoolClient, threadIds: string[]): Promise<DeletedThreads> {
    if (threadIds.length === 0) {
      return { threads: 0, runs: 0, events: 0, decisions: 0, checkpoints: 0, writes: 0, blobs: 0 };
    }
    const { rows } = await client.query<{ runs: number; events: number; decisions: number }>(
      `SELECT (SELECT count(*) FROM svc_runs WHERE thread_id = ANY($1::uuid[]))::integer AS runs,
              (SELECT COALESCE(sum(COALESCE(e.seq_last - e.seq + 1, 1)), 0) FROM svc_run_events e JOIN svc_runs r ON r.id = e.run_id
                WHERE r.thread_id = ANY($1::uuid[]))::integer AS events,
              (SELECT count(*) FROM svc_gate_decisions WHERE thread_id = ANY($1::uuid[]))::integer AS decisions`,
      [threadIds],
    );
    const writes = await client.query(`DELETE FROM ${cp.writes} WHERE thread_id = ANY($1)`, [threadIds]);
    const blobs = await client.query(`DELETE FROM ${cp.blobs} WHERE thread_id = ANY($1)`, [threadIds]);
    const checkpoints = await client.query(`DELETE FROM ${cp.checkpoints} WHERE thread_id = ANY($1)`, [threadIds]);
    // Runs, their events, node rows, decision records, model turns and tool calls, and the thread's tool grants go
    // with the thread (ON DELETE CASCADE).
    const threads = await client.query(`DELETE FROM svc_threads WHERE id = ANY($1::uuid[])`, [threadIds]);
    return {
      threads: threads.rowCount ?? 0,
      ...rows[0]!,
      checkpoints: checkpoints.rowCount ?? 0,
      writes: writes.rowCount ?? 0,
      blobs: blobs.rowCount ?? 0,
    };
  }

  /**
   * Locks the threads `selectSql` picks (`FOR UPDATE OF t SKIP LOCKED`), then keeps those still not in use. A run
   * starts on a thread with its row locked (svc_start_run), so none starts on these until the transaction ends; the
   * second look, with a fresh snapshot, sees a run that started between the pick and its lock.
   */
  async function lockIdleThreads(client: pg.PoolClient, selectSql: string, params: unknown[]): Promise<string[]> {
    const { rows } = await client.query<{ id: string }>(selectSql, params);
    if (rows.length === 0) return [];
    const { rows: idle } = await client.query<{ id: string }>(
      `SELECT t.id FROM svc_threads t WHERE t.id = ANY($1::uuid[]) AND ${NOT_IN_USE}`,
      [rows.map((r) => r.id)],
    );
    return idle.map((r) => r.id);
  }

  return {
    async settings(projectId: string): Promise<ProjectRetention> {
      const { rows } = await pool.query<SettingsRow>(
        `SELECT keep_finished_threads_days, prune_checkpoints, updated_at FROM svc_project_retention
          WHERE project_id = $1`,
        [projectId],
      );
      const row = rows[0];
      return {
        project_id: projectId,
        keep_finished_threads_days: row?.keep_finished_threads_days ?? null,
        prune_checkpoints: row?.prune_checkpoints ?? false,
        updated_at: row?.updated_at?.toISOString() ?? null,
      };
    },

    async saveSettings(projectId: string, settings: RetentionSettings, by: string): Promise<void> {
      await pool.query(
        `INSERT INTO svc_project_retention (project_id, keep_finished_threads_days, prune_checkpoints, updated_by)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (project_id) DO UPDATE SET keep_finished_threads_days = EXCLUDED.keep_finished_threads_days,
           prune_checkpoints = EXCLUDED.prune_checkpoints, updated_by = EXCLUDED.updated_by, updated_at = now()`,
        [projectId, settings.keep_finished_threads_days, settings.prune_checkpoints, by],
      );
    },

    /**
     * Deletes checkpoints of one thread (by id, in any namespace) with their writes, and the blobs no checkpoint of
     * the thread refers to any more, in one transaction. For a thread no run is executing on: a run writes its next
     * checkpoint on top of its last one, and shares that one's blobs.
     */
    deleteCheckpoints(threadId: string, checkpointIds: readonly string[]): Promise<DeletedCheckpoints> {
      return withTransaction(pool, (client) => deleteCheckpoints(client, threadId, checkpointIds));
    },

    /**
     * Claims this interval's pass of a periodic job for `owner`: true for one caller per interval across every
     * process, however their timers fall. A pass that starts late (its process was busy) still counts its interval
     * from its own start, so passes never come closer than `intervalS` less a tenth.
     */
    async claimPass(job: string, intervalS: number, owner: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `INSERT INTO svc_janitor_passes AS p (job, started_at, started_by) VALUES ($1, now(), $3)
         ON CONFLICT (job) DO UPDATE SET started_at = now(), started_by = EXCLUDED.started_by, finished_at = NULL
          WHERE p.started_at <= now() - make_interval(secs => $2 * 0.9)`,
        [job, intervalS, owner],
      );
      return (rowCount ?? 0) > 0;
    },

    async finishPass(job: string, owner: string): Promise<void> {
      await pool.query(`UPDATE svc_janitor_passes SET finished_at = now() WHERE job = $1 AND started_by = $2`, [
        job,
        owner,
      ]);
    },

    /**
     * One batch of expiry: up to `limit` threads of projects that keep finished threads for a number of days, not in
     * use, whose last activity is older than that, deleted whole. Threads another transaction holds (a run starting
     * on one locks its row) are skipped until the next pass; a run cannot start on one while this holds it.
     */
    expireBatch(limit: number): Promise<DeletedThreads> {
      return withTransaction(pool, async (client) => {
        const ids = await lockIdleThreads(
          client,
          `SELECT t.id FROM svc_threads t JOIN svc_project_retention s ON s.project_id = t.project_id
            WHERE s.keep_finished_threads_days IS NOT NULL
              AND ${LAST_ACTIVE} < now() - make_interval(days => s.keep_finished_threads_days)
              AND ${NOT_IN_USE}
            ORDER BY t.updated_at
            LIMIT $1
            FOR UPDATE OF t SKIP LOCKED`,
          [limit],
        );
        return deleteThreadsIn(client, ids);
      });
    },

    /**
     * One batch of drafts (threads made through the LangGraph API that never had a run) in projects that keep finished
     * threads for a number of days, untouched for longer than that: deleted. A draft whose first run starts as it
     * goes keeps its thread, which the run makes; only the metadata the draft held would be lost with it.
     */
    async expireDrafts(limit: number): Promise<number> {
      const { rowCount } = await pool.query(
        `DELETE FROM svc_lg_drafts WHERE id IN (
           SELECT d.id FROM svc_lg_drafts d JOIN svc_project_retention s ON s.project_id = d.project_id
            WHERE s.keep_finished_threads_days IS NOT NULL
              AND d.updated_at < now() - make_interval(days => s.keep_finished_threads_days)
            ORDER BY d.updated_at
            LIMIT $1
            FOR UPDATE OF d SKIP LOCKED)`,
        [limit],
      );
      return rowCount ?? 0;
    },

    /**
     * One batch of pruning: up to `limit` threads of projects that prune, not in use, at rest for `afterHours` and
     * active since they were last pruned, each pruned to the checkpoints it keeps (see `keptCheckpoints`).
     */
    pruneBatch(limit: number, afterHours: number): Promise<PrunedThread[]> {
      return withTransaction(pool, async (client) => {
        const ids = await lockIdleThreads(
          client,
          `SELECT t.id FROM svc_threads t JOIN svc_project_retention s ON s.project_id = t.project_id
            WHERE s.prune_checkpoints
              AND ${LAST_ACTIVE} < now() - make_interval(hours => $2)
              AND (t.checkpoints_pruned_at IS NULL OR t.checkpoints_pruned_at < ${LAST_ACTIVE})
              AND ${NOT_IN_USE}
            ORDER BY t.updated_at
            LIMIT $1
            FOR UPDATE OF t SKIP LOCKED`,
          [limit, afterHours],
        );
        const pruned: PrunedThread[] = [];
        for (const id of ids) {
          const { rows: drop } = await client.query<{ checkpoint_id: string }>(
            `WITH kept AS (
               (SELECT checkpoint_id FROM ${cp.checkpoints}
                 WHERE thread_id = $1 AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1)
               UNION SELECT forked_from ->> 'checkpoint_id' FROM svc_runs
                      WHERE thread_id = $1::uuid AND forked_from IS NOT NULL
               UNION SELECT gate_checkpoint_id FROM svc_runs WHERE thread_id = $1::uuid AND gate_checkpoint_id IS NOT NULL
             ), with_parents AS (
               SELECT checkpoint_id FROM kept
               UNION SELECT c.parent_checkpoint_id FROM ${cp.checkpoints} c JOIN kept k USING (checkpoint_id)
                      WHERE c.thread_id = $1 AND c.checkpoint_ns = '' AND c.parent_checkpoint_id IS NOT NULL
             )
             SELECT checkpoint_id FROM ${cp.checkpoints} c
              WHERE c.thread_id = $1 AND c.checkpoint_ns = ''
                AND NOT EXISTS (SELECT 1 FROM with_parents w WHERE w.checkpoint_id = c.checkpoint_id)`,
            [id],
          );
          const deleted = await deleteCheckpoints(
            client,
            id,
            drop.map((r) => r.checkpoint_id),
          );
          const { rows: left } = await client.query<{ n: number }>(
            `SELECT count(*)::integer AS n FROM ${cp.checkpoints} WHERE thread_id = $1`,
            [id],
          );
          await client.query(`UPDATE svc_threads SET checkpoints_pruned_at = now() WHERE id = $1`, [id]);
          pruned.push({ threadId: id, kept: left[0]!.n, ...deleted });
        }
        return pruned;
      });
    },
  };
}

export type RetentionRepository = ReturnType<typeof retentionRepository>;
