import type { Check, Score } from '../contracts/datasets';
import type { ExperimentItem, ExperimentStatus } from '../contracts/experiments';
import type { ItemToRun } from './datasets.repository';
import { withTransaction, type Pool } from './pool';

export interface ExperimentRow {
  id: string;
  dataset_id: string;
  project_id: string;
  name: string | null;
  agent: string;
  agent_version: string;
  manifest_hash: string;
  model: string;
  checks: Check[];
  status: ExperimentStatus;
  created_by: string;
  created_by_name: string;
  created_at: Date;
  finished_at: Date | null;
}

export interface ExperimentItemRow {
  item_id: string;
  position: number;
  message: string;
  project_path: string | null;
  expected: string | null;
  checks: Check[];
  source_run_id: string | null;
  status: ExperimentItem['status'] | 'starting';
  run_id: string | null;
  run_status: string | null;
  output: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: string | null;
  first_token_ms: number | null;
  run_ms: number | null;
  scores: Score[];
  error: string | null;
}

/** What an item's scoring stores. */
export interface ScoredItem {
  status: 'done' | 'failed';
  runStatus: string | null;
  output: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  costUsd: number | null;
  firstTokenMs: number | null;
  runMs: number | null;
  scores: Score[];
  error: string | null;
}

const SELECT_EXPERIMENT = `
  SELECT e.id, e.dataset_id, d.project_id, e.name, e.agent, e.agent_version, e.manifest_hash, e.model, e.checks,
         e.status, e.created_by, e.created_by_name, e.created_at, e.finished_at
    FROM svc_experiments e JOIN svc_datasets d ON d.id = e.dataset_id`;

const ITEM_FIELDS = [
  'item_id',
  'position',
  'message',
  'project_path',
  'expected',
  'checks',
  'source_run_id',
  'status',
  'run_id',
  'run_status',
  'output',
  'input_tokens',
  'output_tokens',
  'cost_usd',
  'first_token_ms',
  'run_ms',
  'scores',
  'error',
];
const ITEM_COLUMNS = ITEM_FIELDS.join(', ');
/** The same, of the row an UPDATE … FROM changed (`i`). */
const UPDATED_ITEM_COLUMNS = ITEM_FIELDS.map((field) => `i.${field}`).join(', ');

/** The run statuses at which an experiment scores its item: the run ended, or stopped for a person. */
const SCORABLE = `('completed', 'rejected', 'error', 'cancelled', 'waiting_approval')`;

/**
 * Experiments and their items (docs/compare.md#datasets-and-experiments). Any process drives any experiment: a
 * claim on an item ('starting', 'scoring') holds for a lease and is taken over once it lapses, and the count of
 * items under way is read under the experiment's row lock, so the cluster together never runs more than allowed.
 */
export function experimentsRepository(pool: Pool) {
  return {
    async create(
      e: Omit<ExperimentRow, 'project_id' | 'status' | 'created_at' | 'finished_at'>,
      items: readonly ItemToRun[],
    ): Promise<void> {
      await withTransaction(pool, async (client) => {
        await client.query(
          `INSERT INTO svc_experiments (id, dataset_id, name, agent, agent_version, manifest_hash, model, checks,
                                        created_by, created_by_name)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          [
            e.id,
            e.dataset_id,
            e.name,
            e.agent,
            e.agent_version,
            e.manifest_hash,
            e.model,
            JSON.stringify(e.checks),
            e.created_by,
            e.created_by_name,
          ],
        );
        await client.query(
          `INSERT INTO svc_experiment_items (experiment_id, item_id, position, message, project_path, expected, checks,
                                             source_run_id)
           SELECT $1, i.id, i.position, i.message, i.project_path, i.expected, i.checks, i.source_run_id
             FROM jsonb_to_recordset($2::jsonb) AS i(id uuid, position integer, message text, project_path text,
                                                     expected text, checks jsonb, source_run_id uuid)`,
          [e.id, JSON.stringify(items)],
        );
      });
    },

    async get(id: string): Promise<ExperimentRow | undefined> {
      const { rows } = await pool.query<ExperimentRow>(`${SELECT_EXPERIMENT} WHERE e.id = $1`, [id]);
      return rows[0];
    },

    /** A dataset's experiments, newest first. */
    async ofDataset(datasetId: string): Promise<ExperimentRow[]> {
      const { rows } = await pool.query<ExperimentRow>(
        `${SELECT_EXPERIMENT} WHERE e.dataset_id = $1 ORDER BY e.created_at DESC, e.id`,
        [datasetId],
      );
      return rows;
    },

    /** The items of experiments, in order, by experiment. */
    async items(experimentIds: readonly string[]): Promise<Map<string, ExperimentItemRow[]>> {
      const { rows } = await pool.query<ExperimentItemRow & { experiment_id: string }>(
        `SELECT experiment_id, ${ITEM_COLUMNS} FROM svc_experiment_items
          WHERE experiment_id = ANY($1::uuid[]) ORDER BY experiment_id, position`,
        [experimentIds],
      );
      const byExperiment = new Map<string, ExperimentItemRow[]>(experimentIds.map((id) => [id, []]));
      for (const row of rows) byExperiment.get(row.experiment_id)!.push(row);
      return byExperiment;
    },

    /** Experiments still running, oldest first: what the runners drive. */
    async running(limit: number): Promise<ExperimentRow[]> {
      const { rows } = await pool.query<ExperimentRow>(
        `${SELECT_EXPERIMENT} WHERE e.status = 'running' ORDER BY e.created_at LIMIT $1`,
        [limit],
      );
      return rows;
    },

    /**
     * Claims items to start, up to `concurrency` under way in the experiment (starting, running or scoring),
     * taking over a start another process left lapsed; each keeps the run id it was first given, so a start that did
     * happen is found, not made twice. None when another process holds the experiment's row just now.
     */
    async claimStarts(experimentId: string, concurrency: number, leaseS: number): Promise<ExperimentItemRow[]> {
      return withTransaction(pool, async (client) => {
        const locked = await client.query(
          `SELECT 1 FROM svc_experiments WHERE id = $1 AND status = 'running' FOR UPDATE SKIP LOCKED`,
          [experimentId],
        );
        if (!locked.rowCount) return [];
        const { rows } = await client.query<ExperimentItemRow>(
          `WITH busy AS (
             -- A start left lapsed is claimed again below, not counted twice.
             SELECT count(*) AS n FROM svc_experiment_items
              WHERE experiment_id = $1 AND status IN ('starting', 'running', 'scoring')
                AND NOT (status = 'starting' AND claimed_until < now())
           ), next AS (
             SELECT item_id FROM svc_experiment_items
              WHERE experiment_id = $1
                AND (status = 'pending' OR status = 'starting' AND claimed_until < now())
              ORDER BY status DESC, position
              LIMIT GREATEST($2 - (SELECT n FROM busy), 0)
           )
           UPDATE svc_experiment_items i
              SET status = 'starting', run_id = COALESCE(i.run_id, gen_random_uuid()),
                  claimed_until = now() + make_interval(secs => $3)
             FROM next WHERE i.experiment_id = $1 AND i.item_id = next.item_id
           RETURNING ${UPDATED_ITEM_COLUMNS}`,
          [experimentId, concurrency, leaseS],
        );
        return rows;
      });
    },

    /** A claimed start whose run was written: it runs now. False when the item no longer waited for it (cancelled). */
    async started(experimentId: string, itemId: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_experiment_items SET status = 'running', claimed_until = NULL
          WHERE experiment_id = $1 AND item_id = $2 AND status = 'starting'`,
        [experimentId, itemId],
      );
      return (rowCount ?? 0) > 0;
    },

    /** A claimed start that must wait (the runtime's limit, a database away): back in line, its run id kept. */
    async later(experimentId: string, itemId: string, delayS: number): Promise<void> {
      await pool.query(
        `UPDATE svc_experiment_items SET claimed_until = now() + make_interval(secs => $3)
          WHERE experiment_id = $1 AND item_id = $2 AND status = 'starting'`,
        [experimentId, itemId, delayS],
      );
    },

    /** Whether a run was written under this id (a start that happened before its process stopped). */
    async runExists(runId: string): Promise<boolean> {
      return ((await pool.query(`SELECT 1 FROM svc_runs WHERE id = $1`, [runId])).rowCount ?? 0) > 0;
    },

    /**
     * Claims the experiment's items whose runs ended or stopped for a person (or were removed), and scorings another
     * process left lapsed: this process scores them now.
     */
    async claimScorings(experimentId: string, leaseS: number): Promise<ExperimentItemRow[]> {
      const { rows } = await pool.query<ExperimentItemRow>(
        `UPDATE svc_experiment_items i
            SET status = 'scoring', claimed_until = now() + make_interval(secs => $2)
           FROM svc_experiment_items o LEFT JOIN svc_runs r ON r.id = o.run_id
          WHERE i.experiment_id = $1 AND o.experiment_id = i.experiment_id AND o.item_id = i.item_id
            AND (i.status = 'running' AND (r.id IS NULL OR r.status IN ${SCORABLE})
                 OR i.status = 'scoring' AND i.claimed_until < now())
          RETURNING ${UPDATED_ITEM_COLUMNS}`,
        [experimentId, leaseS],
      );
      return rows;
    },

    /** Stores an item's output, figures and scores: it is done (or failed), whichever process scored it. */
    async finish(experimentId: string, itemId: string, scored: ScoredItem): Promise<void> {
      await pool.query(
        `UPDATE svc_experiment_items
            SET status = $3, run_status = $4, output = $5, input_tokens = $6, output_tokens = $7, cost_usd = $8,
                first_token_ms = $9, run_ms = $10, scores = $11, error = $12, claimed_until = NULL
          WHERE experiment_id = $1 AND item_id = $2 AND status IN ('starting', 'running', 'scoring')`,
        [
          experimentId,
          itemId,
          scored.status,
          scored.runStatus,
          scored.output,
          scored.inputTokens,
          scored.outputTokens,
          scored.costUsd,
          scored.firstTokenMs,
          scored.runMs,
          JSON.stringify(scored.scores),
          scored.error,
        ],
      );
    },

    /**
     * Cancels a running experiment: its items not yet scored fail as cancelled, and it stops. Answers the runs that
     * may still be going, to cancel them; undefined when the experiment was not running.
     */
    async cancel(experimentId: string): Promise<string[] | undefined> {
      return withTransaction(pool, async (client) => {
        const { rowCount } = await client.query(
          `UPDATE svc_experiments SET status = 'cancelled', finished_at = now() WHERE id = $1 AND status = 'running'`,
          [experimentId],
        );
        if (!rowCount) return undefined;
        const { rows } = await client.query<{ run_id: string | null; status: string }>(
          `UPDATE svc_experiment_items o SET status = 'failed', error = 'the experiment was cancelled',
                  claimed_until = NULL
             FROM svc_experiment_items i
            WHERE o.experiment_id = $1 AND i.experiment_id = o.experiment_id AND i.item_id = o.item_id
              AND o.status NOT IN ('done', 'failed')
            RETURNING i.run_id, i.status`,
          [experimentId],
        );
        // A pending item's run id is only reserved: no run was written under it.
        return rows.filter((r) => r.run_id && r.status !== 'pending').map((r) => r.run_id!);
      });
    },

    /** Marks the experiment completed once every item is done or failed; true when this call did. */
    async completeIfDone(experimentId: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_experiments SET status = 'completed', finished_at = now()
          WHERE id = $1 AND status = 'running'
            AND NOT EXISTS (SELECT 1 FROM svc_experiment_items
                             WHERE experiment_id = $1 AND status NOT IN ('done', 'failed'))`,
        [experimentId],
      );
      return (rowCount ?? 0) > 0;
    },
  };
}

export type ExperimentsRepository = ReturnType<typeof experimentsRepository>;
