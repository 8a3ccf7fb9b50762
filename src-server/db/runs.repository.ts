import type {
  GateResume,
  NodeStatus,
  NodeWarning,
  PendingGate,
  RouteMatch,
  Run,
  RunNode,
  RunStatus,
} from '../contracts/runs';
import type { Pool } from './pool';
import { CANCEL_CHANNEL } from './run-notifications';
import { storable, storableJson } from './text';

export const ORPHAN_AGE_S = 3600;

/**
 * The startup sweep (docs/run-lifecycle.md#timeouts-and-orphans): a run still `running` after an hour that no
 * lease covers (a lease is taken over instead) was orphaned by a crash, so it and its open nodes are closed as
 * `error`. Returns how many runs were closed.
 */
export async function sweepOrphanedRuns(pool: Pool, olderThanS = ORPHAN_AGE_S): Promise<number> {
  const result = await pool.query<{ id: string }>(
    `WITH swept AS (
       UPDATE svc_runs
          SET status = 'error',
              error_detail = COALESCE(error_detail, 'OrphanedRunError: the server stopped while this run was running'),
              finished_at = now()
        WHERE status = 'running' AND owner_id IS NULL AND started_at < now() - make_interval(secs => $1)
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

interface RunRow {
  id: string;
  thread_id: string;
  agent: string;
  model: string | null;
  status: RunStatus;
  message: string | null;
  project_path: string | null;
  output: string | null;
  error_detail: string | null;
  end_reason: string | null;
  started_at: Date;
  finished_at: Date | null;
  routes: RouteMatch[];
  event_seq: number;
  pending_gate: PendingGate | null;
  project_id: string | null;
}

export interface StoredRun extends Run {
  routes: RouteMatch[];
  event_seq: number;
  pending_gate: PendingGate | null;
  project_id: string | null;
}

function toRun(row: RunRow): StoredRun {
  return {
    id: row.id,
    thread_id: row.thread_id,
    agent: row.agent,
    model: row.model,
    status: row.status,
    message: row.message,
    project_path: row.project_path,
    output: row.output,
    error_detail: row.error_detail,
    end_reason: row.end_reason,
    started_at: row.started_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
    routes: row.routes,
    event_seq: row.event_seq,
    pending_gate: row.pending_gate,
    project_id: row.project_id,
  };
}

const SELECT_RUN = `
  SELECT r.id, r.thread_id, r.agent, r.model, r.status, r.message, r.project_path, r.output, r.error_detail,
         r.end_reason, r.started_at, r.finished_at, r.routes, r.event_seq, r.pending_gate, t.project_id
    FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id`;

export interface NewRun {
  id: string;
  threadId: string;
  /** The thread to create with the run (its project); null: the run goes on an existing thread. */
  newThread: { projectId: string } | null;
  agent: string;
  model: string;
  message: string;
  projectPath: string | null;
  createdBy: string;
  /** A run on a branch: where it starts. */
  forkedFrom: ForkedFrom | null;
  /** Whether the model is the local runtime's (models/model-ref.ts parseModel). */
  localRuntime: boolean;
  /** The most local-runtime runs the user may have going at once, this one included; null: no limit. */
  localCap: number | null;
}

export type StartOutcome =
  | { outcome: 'started' }
  /** The thread has this run running or waiting: nothing was written. */
  | { outcome: 'active'; active: { id: string; status: RunStatus } }
  /** The user has `going` local-runtime runs already: nothing was written. */
  | { outcome: 'over_limit'; going: number };

/** Who executes a run: a server process, until its lease lapses. */
export interface Lease {
  owner: string;
  leaseS: number;
}

/** A running run whose lease had lapsed, now claimed by this process. */
export interface ClaimedRun extends StoredRun {
  /** The how-many-th execution this is (1 for the first). */
  attempts: number;
  /** Ids up to here may have reached clients; the new execution continues after it. */
  seq_reserved: number;
  /** The decision being resumed when the previous execution died, if it died right after a gate. */
  resume_decision: GateResume | null;
}

const now = () => Date.now() / 1000;

/** What a node row keeps of its model calls besides the output. */
export type NodeFigures = Pick<RunNode, 'queue_wait_ms' | 'prompt_tokens' | 'output_tokens' | 'thinking'> & {
  warnings: NodeWarning[];
};

/** Where a run on a branch starts: a checkpoint of its thread, with the phase outputs it replaced. */
export interface ForkedFrom {
  checkpoint_id: string;
  /** The run that wrote the checkpoint. */
  run_id: string | null;
  outputs: Record<string, string>;
}

/** Runs and their nodes. Every status change is guarded by the status it expects, so two processes never both win. */
export function runsRepository(pool: Pool) {
  return {
    /**
     * Writes a run's row (and its thread's, for a new thread), leased to the process that executes it, with its first
     * block of event ids reserved: one round trip (svc_start_run in schema.ts). Nothing is written when the thread has
     * an active run (that run is answered) or when a run on the local runtime would take the user past `localCap`
     * (the runs she has going are answered).
     */
    async start(run: NewRun, lease: Lease, seqReserved: number): Promise<StartOutcome> {
      const { rows } = await pool.query<{
        outcome: 'started' | 'active' | 'over_limit';
        active_id: string | null;
        active_status: RunStatus | null;
        going: number | null;
      }>(
        `SELECT outcome, active_id, active_status, going
           FROM svc_start_run($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14, $15)`,
        [
          run.id,
          run.threadId,
          run.newThread !== null,
          run.newThread?.projectId ?? null,
          run.agent,
          run.model,
          run.message,
          run.projectPath,
          run.createdBy,
          lease.owner,
          lease.leaseS,
          seqReserved,
          run.forkedFrom ? storableJson(run.forkedFrom) : null,
          run.localRuntime,
          run.localCap,
        ],
      );
      const row = rows[0]!;
      if (row.outcome === 'active')
        return { outcome: 'active', active: { id: row.active_id!, status: row.active_status! } };
      if (row.outcome === 'over_limit') return { outcome: 'over_limit', going: row.going! };
      return { outcome: 'started' };
    },

    /** Where a run on a branch starts (undefined for any other run). */
    async forkOf(runId: string): Promise<ForkedFrom | undefined> {
      const { rows } = await pool.query<{ forked_from: ForkedFrom | null }>(
        'SELECT forked_from FROM svc_runs WHERE id = $1',
        [runId],
      );
      return rows[0]?.forked_from ?? undefined;
    },

    /**
     * Renews the lease of every run this process executes, in one statement; returns the ids still ours
     * (a run missing from the answer was cancelled, finished, or taken over after a stall).
     */
    async renewLeases(lease: Lease): Promise<string[]> {
      const { rows } = await pool.query<{ id: string }>(
        `UPDATE svc_runs SET lease_until = now() + make_interval(secs => $2)
          WHERE owner_id = $1 AND status = 'running' RETURNING id`,
        [lease.owner, lease.leaseS],
      );
      return rows.map((r) => r.id);
    },

    /**
     * Claims one running run whose lease has lapsed (its process died): one conditional UPDATE, so when
     * several processes race for it exactly one gets it.
     */
    async claimLapsed(lease: Lease): Promise<ClaimedRun | undefined> {
      const { rows } = await pool.query<RunRow & Pick<ClaimedRun, 'attempts' | 'seq_reserved' | 'resume_decision'>>(
        `WITH claimed AS (
           UPDATE svc_runs SET owner_id = $1, lease_until = now() + make_interval(secs => $2), attempts = attempts + 1
            WHERE id = (SELECT id FROM svc_runs WHERE status = 'running' AND lease_until < now()
                         ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED)
              AND status = 'running' AND lease_until < now()
            RETURNING *
         )
         SELECT r.id, r.thread_id, r.agent, r.model, r.status, r.message, r.project_path, r.output, r.error_detail,
                r.end_reason, r.started_at, r.finished_at, r.routes, r.event_seq, r.pending_gate, t.project_id,
                r.attempts, r.seq_reserved, r.resume_decision
           FROM claimed r JOIN svc_threads t ON t.id = r.thread_id`,
        [lease.owner, lease.leaseS],
      );
      const row = rows[0];
      return (
        row && {
          ...toRun(row),
          attempts: row.attempts,
          seq_reserved: row.seq_reserved,
          resume_decision: row.resume_decision,
        }
      );
    },

    /** Whether a process executes the run, or will once its lapsed lease is taken over. */
    async isExecuted(id: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `SELECT 1 FROM svc_runs WHERE id = $1 AND status = 'running' AND owner_id IS NOT NULL`,
        [id],
      );
      return (rowCount ?? 0) > 0;
    },

    /** A process that stops lets the runs it executed be taken over at once. */
    async releaseLeases(owner: string): Promise<void> {
      await pool.query(`UPDATE svc_runs SET lease_until = now() WHERE owner_id = $1 AND status = 'running'`, [owner]);
    },

    /** Ids up to `upTo` may be handed out to clients by `owner`: a takeover continues after them. */
    async reserveSeq(id: string, owner: string, upTo: number): Promise<void> {
      await pool.query(
        `UPDATE svc_runs SET seq_reserved = GREATEST(seq_reserved, $3) WHERE id = $1 AND owner_id = $2`,
        [id, owner, upTo],
      );
    },

    /** The node rows an execution left open when its process died; their partial output is replaced by a rerun. */
    async dropOpenNodes(runId: string): Promise<string[]> {
      const { rows } = await pool.query<{ node_id: string }>(
        `DELETE FROM svc_run_nodes WHERE run_id = $1 AND exited_at IS NULL AND status = 'running' RETURNING node_id`,
        [runId],
      );
      return rows.map((r) => r.node_id);
    },

    async get(id: string): Promise<StoredRun | undefined> {
      const { rows } = await pool.query<RunRow>(`${SELECT_RUN} WHERE r.id = $1`, [id]);
      return rows[0] && toRun(rows[0]);
    },

    async listByThread(threadId: string): Promise<StoredRun[]> {
      const { rows } = await pool.query<RunRow>(
        `${SELECT_RUN} WHERE r.thread_id = $1 ORDER BY r.started_at DESC, r.id`,
        [threadId],
      );
      return rows.map(toRun);
    },

    async waitingInThread(threadId: string): Promise<StoredRun | undefined> {
      const { rows } = await pool.query<RunRow>(
        `${SELECT_RUN} WHERE r.thread_id = $1 AND r.status = 'waiting_approval' ORDER BY r.started_at DESC LIMIT 1`,
        [threadId],
      );
      return rows[0] && toRun(rows[0]);
    },

    async activeInThread(threadId: string): Promise<StoredRun | undefined> {
      const { rows } = await pool.query<RunRow>(
        `${SELECT_RUN} WHERE r.thread_id = $1 AND r.status IN ('running', 'waiting_approval') ORDER BY r.started_at DESC LIMIT 1`,
        [threadId],
      );
      return rows[0] && toRun(rows[0]);
    },

    async nodes(runId: string): Promise<RunNode[]> {
      const { rows } = await pool.query<RunNode>(
        `SELECT node_id, status, output, entered_at, exited_at, queue_wait_ms, prompt_tokens, output_tokens, warnings, thinking
           FROM svc_run_nodes WHERE run_id = $1 ORDER BY id`,
        [runId],
      );
      return rows;
    },

    /**
     * Ends a running run that `owner` executes; false when it was no longer running (cancelled meanwhile)
     * or no longer ours (taken over after this process stalled past its lease).
     */
    async finish(
      id: string,
      owner: string,
      status: RunStatus,
      fields: { output?: string | null; errorDetail?: string | null; endReason?: string | null; eventSeq: number },
    ): Promise<boolean> {
      const result = await pool.query(
        `UPDATE svc_runs SET status = $3, output = COALESCE($4, output), error_detail = $5, event_seq = $6,
                end_reason = $7, finished_at = now(), owner_id = NULL, lease_until = NULL, resume_decision = NULL
          WHERE id = $1 AND status = 'running' AND owner_id = $2`,
        [
          id,
          owner,
          status,
          storable(fields.output ?? null),
          storable(fields.errorDetail ?? null),
          fields.eventSeq,
          storable(fields.endReason ?? null),
        ],
      );
      return (result.rowCount ?? 0) > 0;
    },

    /**
     * A run that `owner` executes stops at a gate, from now until `expiresAt` (null: until someone decides); false
     * when it was cancelled or taken over meanwhile.
     */
    async pause(
      id: string,
      owner: string,
      gate: PendingGate,
      eventSeq: number,
      waitingSince: Date,
      expiresAt: Date | null,
    ): Promise<boolean> {
      const result = await pool.query(
        `UPDATE svc_runs SET status = 'waiting_approval', pending_gate = $3, event_seq = $4,
                owner_id = NULL, lease_until = NULL, resume_decision = NULL, gate_waiting_since = $5,
                gate_expires_at = $6
          WHERE id = $1 AND status = 'running' AND owner_id = $2`,
        [id, owner, storableJson(gate), eventSeq, waitingSince, expiresAt],
      );
      return (result.rowCount ?? 0) > 0;
    },

    /**
     * Cancels a running or waiting run and closes its open nodes; false when it had already finished.
     * The same statement announces it on CANCEL_CHANNEL, so whichever process executes the run aborts it, and
     * keeps the reason, which that process reads back for its run_cancelled event.
     */
    async cancel(id: string, eventSeq?: number, reason?: string | null): Promise<boolean> {
      const result = await pool.query(
        `WITH cancelled AS (
           UPDATE svc_runs SET status = 'cancelled', finished_at = now(), pending_gate = NULL,
                  event_seq = GREATEST(event_seq, COALESCE($2, 0)), owner_id = NULL, lease_until = NULL,
                  resume_decision = NULL, end_reason = COALESCE($5, end_reason)
            WHERE id = $1 AND status IN ('running', 'waiting_approval')
            RETURNING id
         ), closed AS (
           UPDATE svc_run_nodes SET status = 'cancelled', exited_at = $3
            WHERE exited_at IS NULL AND run_id IN (SELECT id FROM cancelled)
         )
         SELECT id, pg_notify($4, id::text) FROM cancelled`,
        [id, eventSeq ?? null, now(), CANCEL_CHANNEL, storable(reason ?? null)],
      );
      return (result.rowCount ?? 0) > 0;
    },

    async addRoute(runId: string, route: RouteMatch): Promise<void> {
      await pool.query(`UPDATE svc_runs SET routes = routes || $2::jsonb WHERE id = $1`, [
        runId,
        storableJson([route]),
      ]);
    },

    async enterNode(runId: string, nodeId: string, status: NodeStatus): Promise<number> {
      const { rows } = await pool.query<{ id: number }>(
        `INSERT INTO svc_run_nodes (run_id, node_id, status, entered_at) VALUES ($1, $2, $3, $4) RETURNING id`,
        [runId, nodeId, status, now()],
      );
      return rows[0]!.id;
    },

    async saveNodeOutput(rowId: number, output: string): Promise<void> {
      await pool.query(`UPDATE svc_run_nodes SET output = $2 WHERE id = $1 AND exited_at IS NULL`, [
        rowId,
        storable(output),
      ]);
    },

    /** A model phase's figures from the runtime (or provider), written as they are known and when the node ends. */
    async saveNodeFigures(rowId: number, figures: NodeFigures): Promise<void> {
      await pool.query(
        `UPDATE svc_run_nodes SET queue_wait_ms = $2, prompt_tokens = $3, output_tokens = $4, warnings = $5::jsonb,
                thinking = $6 WHERE id = $1`,
        [
          rowId,
          figures.queue_wait_ms,
          figures.prompt_tokens,
          figures.output_tokens,
          storableJson(figures.warnings),
          storable(figures.thinking),
        ],
      );
    },

    /** Closes a node; `exited` false keeps it open (a gate that waits). */
    async setNodeStatus(rowId: number, status: NodeStatus, output: string | null, exited: boolean): Promise<void> {
      await pool.query(
        `UPDATE svc_run_nodes SET status = $2, output = COALESCE($3, output), exited_at = CASE WHEN $4 THEN $5::double precision ELSE NULL END
          WHERE id = $1`,
        [rowId, status, storable(output), exited, now()],
      );
    },

    /** Closes every row of the run still open (a failed or cancelled run leaves none `running`). */
    async closeOpenNodes(runId: string, status: NodeStatus): Promise<void> {
      await pool.query(`UPDATE svc_run_nodes SET status = $2, exited_at = $3 WHERE run_id = $1 AND exited_at IS NULL`, [
        runId,
        status,
        now(),
      ]);
    },

    /** The open row of a node (a waiting gate), so a resume continues the same row. */
    async openNodeRow(runId: string, nodeId: string): Promise<number | undefined> {
      const { rows } = await pool.query<{ id: number }>(
        `SELECT id FROM svc_run_nodes WHERE run_id = $1 AND node_id = $2 AND exited_at IS NULL ORDER BY id DESC LIMIT 1`,
        [runId, nodeId],
      );
      return rows[0]?.id;
    },
  };
}

export type RunsRepository = ReturnType<typeof runsRepository>;
