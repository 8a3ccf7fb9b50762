import type { ModelPull, PullProgress } from '../contracts/models';
import type { Pool } from './pool';

interface PullRow extends Omit<ModelPull, 'total' | 'completed' | 'started_at' | 'updated_at' | 'finished_at'> {
  total: string;
  completed: string;
  started_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

const toPull = (row: PullRow): ModelPull => ({
  ...row,
  total: Number(row.total),
  completed: Number(row.completed),
  started_at: row.started_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
  finished_at: row.finished_at?.toISOString() ?? null,
});

/**
 * A pull whose process stopped writing its progress for this long has no process left: it is failed when read, and
 * the model may be pulled again.
 */
export const PULL_ORPHANED_S = 30;

/** A model's answer speed over the recent phases that used it (the run's model), as the Models view shows it. */
export interface MeasuredSpeed {
  model: string;
  phases: number;
  tokens_per_s: number | null;
}

/** Model pulls and their progress (svc_model_pulls), shared by every process and studio. */
export function modelPullsRepository(pool: Pool) {
  const endOrphans = () =>
    pool.query(
      `UPDATE svc_model_pulls SET status = 'failed', finished_at = now(),
              error = 'the server process pulling it stopped; pull it again'
        WHERE status = 'pulling' AND updated_at < now() - make_interval(secs => $1)`,
      [PULL_ORPHANED_S],
    );

  return {
    /** Starts a pull of the model; undefined when one is under way already. */
    async start(id: string, model: string, startedBy: string): Promise<ModelPull | undefined> {
      await endOrphans();
      const { rows } = await pool.query<PullRow>(
        `INSERT INTO svc_model_pulls (id, model, started_by) VALUES ($1, $2, $3)
         ON CONFLICT (model) WHERE status = 'pulling' DO NOTHING RETURNING *`,
        [id, model, startedBy],
      );
      return rows[0] && toPull(rows[0]);
    },

    /** Writes the progress; answers whether someone asked to cancel the pull. */
    async progress(id: string, progress: PullProgress): Promise<boolean> {
      const { rows } = await pool.query<{ cancel_requested: boolean }>(
        `UPDATE svc_model_pulls SET detail = $2, total = $3, completed = $4, updated_at = now()
          WHERE id = $1 RETURNING cancel_requested`,
        [id, progress.status, progress.total, progress.completed],
      );
      return rows[0]?.cancel_requested ?? true;
    },

    async finish(id: string, status: 'done' | 'failed' | 'cancelled', error: string | null): Promise<void> {
      await pool.query(
        `UPDATE svc_model_pulls SET status = $2, error = $3, updated_at = now(), finished_at = now()
          WHERE id = $1 AND status = 'pulling'`,
        [id, status, error],
      );
    },

    /** Asks the pull's process to stop it; false when it is not under way. */
    async requestCancel(id: string): Promise<ModelPull | undefined> {
      const { rows } = await pool.query<PullRow>(
        `UPDATE svc_model_pulls SET cancel_requested = true WHERE id = $1 AND status = 'pulling' RETURNING *`,
        [id],
      );
      return rows[0] && toPull(rows[0]);
    },

    async get(id: string): Promise<ModelPull | undefined> {
      const { rows } = await pool.query<PullRow>('SELECT * FROM svc_model_pulls WHERE id = $1', [id]);
      return rows[0] && toPull(rows[0]);
    },

    /** Pulls under way, then the last ones that ended (a day at most), newest first. */
    async recent(): Promise<ModelPull[]> {
      await endOrphans();
      const { rows } = await pool.query<PullRow>(
        `SELECT * FROM svc_model_pulls
          WHERE status = 'pulling' OR finished_at > now() - interval '1 day'
          ORDER BY (status = 'pulling') DESC, started_at DESC LIMIT 20`,
      );
      return rows.map(toPull);
    },

    /**
     * Answer tokens a second of the last 200 finished phases that produced tokens, by their run's model: a phase's
     * output tokens over its time less its wait in the queue (the prompt's reading and a cold load count, as a person
     * waits for them too). The median, so that one slow phase does not make a model look slow.
     */
    async speeds(): Promise<MeasuredSpeed[]> {
      const { rows } = await pool.query<{ model: string; phases: number; tokens_per_s: number | null }>(
        `SELECT model, count(*)::int AS phases,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY tokens_per_s) AS tokens_per_s
           FROM (SELECT r.model,
                        n.output_tokens / NULLIF(n.exited_at - n.entered_at - COALESCE(n.queue_wait_ms, 0) / 1000, 0)
                          AS tokens_per_s
                   FROM svc_run_nodes n JOIN svc_runs r ON r.id = n.run_id
                  WHERE n.exited_at IS NOT NULL AND n.output_tokens > 0 AND r.model IS NOT NULL
                  ORDER BY n.id DESC LIMIT 200) recent
          WHERE tokens_per_s > 0
          GROUP BY model`,
      );
      return rows;
    },
  };
}

export type ModelPullsRepository = ReturnType<typeof modelPullsRepository>;
