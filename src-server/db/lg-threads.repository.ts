import type { LgRunRow, LgThreadFilter, LgThreadQuery, LgThreadRow } from '../storage/lg-threads';
import type { Pool } from './pool';

const STATUS = `CASE
    WHEN r.status IN ('running', 'queued') THEN 'busy'
    WHEN r.status = 'waiting_approval' THEN 'interrupted'
    WHEN r.status = 'error' THEN 'error'
    ELSE 'idle' END`;

/** Threads and drafts in one relation, each with its effective metadata and its status. */
const ALL_THREADS = `
  SELECT t.id, t.agent, t.name, t.project_id, t.metadata || jsonb_build_object('graph_id', t.agent) AS metadata,
         t.created_at, t.updated_at, r.id AS last_run_id, r.status AS last_run_status, r.pending_gate, r.event_seq,
         ${STATUS} AS status
    FROM svc_threads t
    LEFT JOIN LATERAL (
      SELECT id, status, pending_gate, event_seq FROM svc_runs WHERE thread_id = t.id ORDER BY started_at DESC LIMIT 1
    ) r ON true
  UNION ALL
  SELECT d.id, NULL, NULL, d.project_id, d.metadata, d.created_at, d.updated_at, NULL, NULL, NULL, NULL, 'idle'
    FROM svc_lg_drafts d
   WHERE NOT EXISTS (SELECT 1 FROM svc_threads t WHERE t.id = d.id)`;

const SORT_COLUMNS: Record<LgThreadQuery['sortBy'], string> = {
  thread_id: 'id',
  status: 'status',
  created_at: 'created_at',
  updated_at: 'updated_at',
};

/**
 * What the LangGraph API keeps beside the service's own tables: drafts (threads created without an agent), thread
 * metadata, and the stream modes and metadata a run was started with; and the reads its answers are built from.
 */
export function lgThreadsRepository(pool: Pool) {
  return {
    /** A draft; false when a thread or a draft of that id exists already. */
    async insertDraft(d: {
      id: string;
      projectId: string;
      createdBy: string;
      metadata: Record<string, unknown>;
    }): Promise<boolean> {
      const { rowCount } = await pool.query(
        `INSERT INTO svc_lg_drafts (id, project_id, created_by, metadata)
         SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM svc_threads WHERE id = $1)
         ON CONFLICT (id) DO NOTHING`,
        [d.id, d.projectId, d.createdBy, d.metadata],
      );
      return rowCount === 1;
    },

    /** A thread or a draft by id, whatever its project (the caller checks access). */
    async get(id: string): Promise<LgThreadRow | undefined> {
      const { rows } = await pool.query<LgThreadRow>(`SELECT * FROM (${ALL_THREADS}) x WHERE id = $1 LIMIT 1`, [id]);
      return rows[0];
    },

    async search(q: LgThreadQuery): Promise<LgThreadRow[]> {
      const order = `${SORT_COLUMNS[q.sortBy]} ${q.sortOrder === 'asc' ? 'ASC' : 'DESC'}, id`;
      const { rows } = await pool.query<LgThreadRow>(
        `SELECT * FROM (${ALL_THREADS}) x
          WHERE ($1::uuid[] IS NULL OR project_id = ANY($1))
            AND metadata @> $2::jsonb
            AND ($3::uuid[] IS NULL OR id = ANY($3))
            AND ($4::text IS NULL OR status = $4)
          ORDER BY ${order}
          LIMIT $5 OFFSET $6`,
        [q.projectIds, q.metadata, q.ids, q.status, q.limit, q.offset],
      );
      return rows;
    },

    async count(q: LgThreadFilter & Pick<LgThreadQuery, 'projectIds'>): Promise<number> {
      const { rows } = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM (${ALL_THREADS}) x
          WHERE ($1::uuid[] IS NULL OR project_id = ANY($1)) AND metadata @> $2::jsonb
            AND ($3::uuid[] IS NULL OR id = ANY($3)) AND ($4::text IS NULL OR status = $4)`,
        [q.projectIds, q.metadata, q.ids, q.status],
      );
      return Number(rows[0]!.n);
    },

    /** Merges `metadata` into a thread's or a draft's (LangGraph's update merges keys). */
    async mergeMetadata(id: string, metadata: Record<string, unknown>): Promise<void> {
      await pool.query(`UPDATE svc_threads SET metadata = metadata || $2, updated_at = now() WHERE id = $1`, [
        id,
        metadata,
      ]);
      await pool.query(`UPDATE svc_lg_drafts SET metadata = metadata || $2, updated_at = now() WHERE id = $1`, [
        id,
        metadata,
      ]);
    },

    /** The first run made the draft a thread of its agent: its metadata goes with it. */
    async settleDraft(id: string): Promise<void> {
      await pool.query(
        `WITH d AS (DELETE FROM svc_lg_drafts WHERE id = $1 RETURNING metadata)
         UPDATE svc_threads t SET metadata = d.metadata || t.metadata FROM d WHERE t.id = $1`,
        [id],
      );
    },

    async deleteDraft(id: string): Promise<boolean> {
      const { rowCount } = await pool.query(`DELETE FROM svc_lg_drafts WHERE id = $1`, [id]);
      return rowCount === 1;
    },

    async recordRun(runId: string, streamMode: string[], metadata: Record<string, unknown>): Promise<void> {
      await pool.query(
        `INSERT INTO svc_lg_runs (run_id, stream_mode, metadata) VALUES ($1, $2, $3) ON CONFLICT (run_id) DO NOTHING`,
        [runId, JSON.stringify(streamMode), metadata],
      );
    },

    /** The event ids each run stopped with (a gate or a tool call), oldest first: the ids of its interrupts. */
    async stopSeqs(runIds: string[]): Promise<Map<string, number[]>> {
      const { rows } = await pool.query<{ run_id: string; seqs: number[] }>(
        `SELECT run_id, array_agg(seq ORDER BY seq) AS seqs FROM svc_run_events
          WHERE run_id = ANY($1) AND type IN ('gate_waiting', 'tool_waiting') GROUP BY run_id`,
        [runIds],
      );
      return new Map(rows.map((row) => [row.run_id, row.seqs]));
    },

    /**
     * The threads' runs, oldest first, each with its phases' outputs (the last visit of each phase), in the order the
     * phases were first entered: by their rows' ids, since a run's rows are written in order. Not by `entered_at`: it
     * is the database's clock less an age measured before the statement waited for its connection, so under load two
     * phases a moment apart could swap.
     */
    async runs(threadIds: string[]): Promise<LgRunRow[]> {
      if (threadIds.length === 0) return [];
      const { rows } = await pool.query<LgRunRow>(
        `SELECT r.id, r.thread_id, r.agent, r.status, r.message, r.error_detail, r.started_at, r.finished_at,
                r.event_seq, r.pending_gate, r.forked_from, l.stream_mode, l.metadata,
                COALESCE((SELECT jsonb_agg(jsonb_build_object('node', n.node_id, 'output', n.output) ORDER BY n.first)
                            FROM (SELECT DISTINCT ON (node_id) node_id, output,
                                         min(id) OVER (PARTITION BY node_id) AS first
                                    FROM svc_run_nodes WHERE run_id = r.id
                                   ORDER BY node_id, id DESC) n), '[]') AS nodes
           FROM svc_runs r LEFT JOIN svc_lg_runs l ON l.run_id = r.id
          WHERE r.thread_id = ANY($1)
          ORDER BY r.started_at, r.id`,
        [threadIds],
      );
      return rows;
    },
  };
}

export type LgThreadsRepository = ReturnType<typeof lgThreadsRepository>;
