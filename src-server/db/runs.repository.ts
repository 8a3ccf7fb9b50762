import type pg from 'pg';
import { statusGuard } from '../contracts/run-transitions';
import type { GateDecisionKind, PendingGate, RouteMatch, Run, RunNode, RunStatus } from '../contracts/runs';
import type { PendingToolCall } from '../contracts/tools';
import type {
  Lease,
  LegHolder,
  NewEvent,
  NewRun,
  NewStopDecision,
  PauseAtGate,
  PendingResume,
  RunEnd,
  RunProgress,
  RunRecord,
  RunStore,
  StartOutcome,
  StopDecision,
  StopTx,
} from '../storage/types';
import { deleteCheckpoints } from './checkpoint-removal';
import { CHECKPOINT_TABLES } from './checkpointer';
import { withTransaction, type Pool } from './pool';
import { CANCEL_CHANNEL } from './run-notifications';
import { RUN_EVENTS_CHANNEL } from './run-events.repository';
import { StatementGroups } from './statement-groups';
import { storable, storableJson } from './text';
import { prepared } from './prepared';

export const ORPHAN_AGE_S = 3600;

/**
 * The startup sweep (docs/run-lifecycle.md#timeouts-and-orphans): a run still `running` after an hour that no
 * lease covers (a lease is taken over instead) was orphaned by a crash, so it and its open nodes are closed as
 * `error`. Returns how many runs were closed.
 */
export async function sweepOrphanedRuns(pool: Pool, olderThanS = ORPHAN_AGE_S): Promise<number> {
  // Its run_error is stored with the change, as every end of a run is: a reader of its events finds where it ended.
  const result = await pool.query<{ id: string }>(
    `WITH swept AS (
       UPDATE svc_runs
          SET status = 'error',
              error_detail = COALESCE(error_detail, 'OrphanedRunError: the server stopped while this run was running'),
              finished_at = now(), event_seq = GREATEST(seq_reserved, event_seq) + 1
        WHERE ${statusGuard('sweep')} AND owner_id IS NULL AND started_at < now() - make_interval(secs => $1)
          -- An imported run is history, kept as it was exported (0017_imported_threads): no sweep, lease, queue or
          -- expiry of the engine ever picks it up.
          AND imported_at IS NULL
        RETURNING id, event_seq, error_detail
     ), closed AS (
       UPDATE svc_run_nodes
          SET status = 'error', exited_at = extract(epoch FROM now())
        WHERE exited_at IS NULL AND run_id IN (SELECT id FROM swept)
     ), stored AS (
       INSERT INTO svc_run_events (run_id, seq, type, data)
       SELECT id, event_seq, 'run_error',
              json_build_object('type', 'run_error', 'run_id', id, 'error_detail', error_detail)::text
         FROM swept
     )
     SELECT id FROM swept`,
    [olderThanS],
  );
  return result.rowCount ?? 0;
}

/** A run as the API shows it, with what its detail adds. */
export interface StoredRun extends Run {
  routes: RouteMatch[];
  event_seq: number;
  pending_gate: PendingGate | null;
  project_id: string;
  /** A run on a branch: the checkpoint it was forked from, and the run that wrote it. */
  forked_from: { run_id: string | null; checkpoint_id: string } | null;
  /** The manifest the run is pinned to (null for runs from before versions). */
  manifest_hash: string | null;
  /** The run this one compares (docs/compare.md); null: not a comparison. */
  comparison_of: string | null;
}

interface RunRow {
  id: string;
  thread_id: string;
  thread_name: string | null;
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
  project_id: string;
  attempts: number;
  handovers: number;
  seq_reserved: number;
  forked_from: RunRecord['forkedFrom'];
  resume_decision: PendingResume | null;
  gate_checkpoint_id: string | null;
  trace_context: string | null;
  agent_version: string | null;
  manifest_hash: string | null;
  comparison_of: string | null;
  experiment_item: string | null;
}

const COLUMNS = `r.id, r.thread_id, r.agent, r.model, r.status, r.message, r.project_path, r.output, r.error_detail,
  r.end_reason, r.started_at, r.finished_at, r.routes, r.event_seq, r.pending_gate, t.project_id, r.attempts,
  r.handovers, r.seq_reserved, r.forked_from, r.resume_decision, r.gate_checkpoint_id, r.trace_context, r.agent_version,
  r.manifest_hash, t.name AS thread_name, r.comparison_of,
  r.experiment_item`;

const SELECT_RUN = `SELECT ${COLUMNS} FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id`;

function toStored(row: RunRow): StoredRun {
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
    forked_from: row.forked_from && { run_id: row.forked_from.run_id, checkpoint_id: row.forked_from.checkpoint_id },
    agent_version: row.agent_version,
    manifest_hash: row.manifest_hash,
    comparison_of: row.comparison_of,
  };
}

function toRecord(row: RunRow): RunRecord {
  return {
    id: row.id,
    threadId: row.thread_id,
    projectId: row.project_id,
    agent: row.agent,
    model: row.model ?? '',
    message: row.message ?? '',
    projectPath: row.project_path,
    status: row.status,
    attempts: row.attempts,
    handovers: row.handovers,
    seqReserved: row.seq_reserved,
    eventSeq: row.event_seq,
    forkedFrom: row.forked_from,
    resume: row.resume_decision,
    endReason: row.end_reason,
    traceContext: row.trace_context,
    agentVersion: row.agent_version,
    manifestHash: row.manifest_hash,
    threadName: row.thread_name,
    comparisonOf: row.comparison_of,
    experimentItem: row.experiment_item,
  };
}

/** The events a statement that ends a leg stores with it, and announces as `svc_run_events` does. */
const STORE_FINAL_EVENTS = `
  stored AS (
    INSERT INTO svc_run_events (run_id, seq, type, data)
    SELECT e.run_id, e.seq, e.type, e.data
      FROM unnest($EV_RUN::uuid[], $EV_SEQ::integer[], $EV_TYPE::text[], $EV_DATA::text[]) AS e(run_id, seq, type, data)
     WHERE EXISTS (SELECT 1 FROM changed)
    ON CONFLICT (run_id, seq) DO NOTHING
    RETURNING run_id, seq
  ), announced AS (
    SELECT pg_notify('${RUN_EVENTS_CHANNEL}', run_id::text || ':' || max(seq)) FROM stored GROUP BY run_id
  )`;

/** The answer of a statement that ends a leg: whether it did; naming `announced` makes its NOTIFY run. */
const ENDED = `SELECT (SELECT count(*) FROM changed)::integer AS n, (SELECT count(*) FROM announced)::integer AS notified`;

/** `$EV_*` placeholders of STORE_FINAL_EVENTS, numbered after a statement's own parameters. */
function withEvents(sql: string, params: unknown[], events: NewEvent[]): [string, unknown[]] {
  const at = params.length;
  const text = sql
    .replace('$EV_RUN', `$${at + 1}`)
    .replace('$EV_SEQ', `$${at + 2}`)
    .replace('$EV_TYPE', `$${at + 3}`)
    .replace('$EV_DATA', `$${at + 4}`);
  return [
    text,
    [
      ...params,
      events.map((e) => e.runId),
      events.map((e) => e.seq),
      events.map((e) => e.type),
      events.map((e) => e.data),
    ],
  ];
}

interface DecisionRow {
  decision: GateDecisionKind;
  decided_by: string | null;
  decided_by_name: string;
  round: number;
  edits: Record<string, string> | null;
  arguments: string | null;
  arguments_sha256: string | null;
  decided_at: Date;
}

/** A run waiting at a gate, locked in `client`'s transaction (runsRepository's atStop and atExpiredStop). */
function stopTx(client: pg.PoolClient, row: RunRow): StopTx {
  const run = { ...toRecord(row), pendingGate: row.pending_gate!, gateCheckpointId: row.gate_checkpoint_id };
  return {
    run,
    async decisions(): Promise<StopDecision[]> {
      const { rows } = await client.query<DecisionRow>(
        `SELECT decision, decided_by, decided_by_name, round, edits, arguments, arguments_sha256, decided_at
           FROM svc_gate_decisions
          WHERE run_id = $1 AND wait_seq = $2 ORDER BY id`,
        [run.id, run.eventSeq],
      );
      return rows.map((r) => ({
        kind: r.decision,
        decidedBy: { id: r.decided_by, name: r.decided_by_name },
        round: r.round,
        edits: r.edits,
        arguments: r.arguments,
        argumentsSha256: r.arguments_sha256,
        decidedAt: r.decided_at,
      }));
    },
    async record(decision: NewStopDecision): Promise<boolean> {
      const { rowCount } = await client.query(
        `INSERT INTO svc_gate_decisions (run_id, thread_id, gate, wait_seq, round, decision, decided_by,
                                         decided_by_name, role, reason, edits, response, outcome, route_to,
                                         tool_call_id, arguments, arguments_sha256, policy_source, via)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, $15, $16, $17, $18, $19)
         ON CONFLICT (run_id, wait_seq, round, decided_by)
           WHERE decided_by IS NOT NULL AND decision IN ('approve', 'edit')
         DO NOTHING`,
        [
          run.id,
          run.threadId,
          run.pendingGate.node,
          run.eventSeq,
          decision.round,
          decision.kind,
          decision.decidedBy.id,
          decision.decidedBy.name,
          decision.role,
          storable(decision.reason),
          decision.edits ? storableJson(decision.edits) : null,
          storable(decision.response),
          decision.outcome,
          decision.routeTo,
          decision.toolCallId,
          decision.arguments,
          decision.argumentsSha256,
          // A decision on a tool call: where the policy that asked came from, as the waiting call said.
          run.pendingGate.tool_call?.policy_source ?? null,
          decision.via,
        ],
      );
      return (rowCount ?? 0) > 0;
    },
    async showEdits(edits: Record<string, string>): Promise<void> {
      await client.query(
        `UPDATE svc_runs SET pending_gate = jsonb_set(pending_gate, '{context}', (pending_gate->'context') || $2::jsonb)
          WHERE id = $1`,
        [run.id, storableJson(edits)],
      );
    },
    async showToolCall(call: PendingToolCall): Promise<void> {
      await client.query(
        `UPDATE svc_runs SET pending_gate = jsonb_set(pending_gate, '{tool_call}', $2) WHERE id = $1`,
        [run.id, storableJson(call)],
      );
    },
    async claim(resume: PendingResume, lease: Lease, seqReserved: number): Promise<void> {
      await client.query(
        `UPDATE svc_runs SET status = 'running', pending_gate = NULL, owner_id = $2,
                lease_until = now() + make_interval(secs => $3), resume_decision = $4, attempts = 1, handovers = 0,
                seq_reserved = GREATEST(seq_reserved, $5), gate_expires_at = NULL, gate_checkpoint_id = NULL
          WHERE id = $1 AND ${statusGuard('resume')}`,
        [run.id, lease.owner, lease.leaseS, storableJson(resume), seqReserved],
      );
    },
  };
}

type Queryable = Pick<pg.PoolClient, 'query'>;

/** Writes a new run's row through svc_start_agent_run (migrations/), which applies the strategy under a lock. */
/** A run to start with what its start needs besides itself. */
interface Starting {
  run: NewRun;
  lease: Lease;
  seqReserved: number;
}

interface StartRow {
  outcome: 'started' | 'active' | 'over_limit' | 'queued';
  active_id: string | null;
  active_status: RunStatus | null;
  going: number | null;
}

/**
 * Starts runs with svc_start_agent_run, one call per run in one statement, in order: each call sees the runs the calls
 * before it started (a caller's cap on local runs counts them). Started together, hundreds of runs of one caller
 * otherwise waited for each other's commit under the caller's lock, each holding a connection of the pool meanwhile.
 */
async function startRows(db: Queryable, starts: Starting[]): Promise<StartOutcome[]> {
  const column = <T>(of: (start: Starting) => T) => starts.map(of);
  const { rows } = await db.query<StartRow>(
    prepared(`SELECT s.outcome, s.active_id, s.active_status, s.going
       FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[],
                   $9::uuid[], $10::text[], $11::double precision[], $12::integer[], $13::jsonb[], $14::boolean[],
                   $15::integer[], $16::text[], $17::text[], $18::text[], $19::text[], $20::boolean[])
              WITH ORDINALITY AS c(run, thread, new_thread, project, agent, model, message, project_path, created_by,
                                   owner, lease_s, seq_reserved, forked_from, local, local_cap, strategy,
                                   trace_context, agent_version, manifest_hash, draft, n)
       CROSS JOIN LATERAL svc_start_agent_run(c.run, c.thread, c.new_thread, c.project, c.agent, c.model, c.message,
                                              c.project_path, c.created_by, c.owner, c.lease_s, c.seq_reserved,
                                              c.forked_from, c.local, c.local_cap, c.strategy, c.trace_context,
                                              c.agent_version, c.manifest_hash, c.draft) AS s
      ORDER BY c.n`),
    [
      column(({ run }) => run.id),
      column(({ run }) => run.threadId),
      column(({ run }) => run.newThread !== null),
      column(({ run }) => run.newThread?.projectId ?? null),
      column(({ run }) => run.agent),
      column(({ run }) => run.model),
      column(({ run }) => storable(run.message)),
      column(({ run }) => run.projectPath),
      column(({ run }) => run.createdBy),
      column(({ lease }) => lease.owner),
      column(({ lease }) => lease.leaseS),
      column(({ seqReserved }) => seqReserved),
      column(({ run }) => (run.forkedFrom ? storableJson(run.forkedFrom) : null)),
      column(({ run }) => run.localRuntime),
      column(({ run }) => run.localCap),
      column(({ run }) => run.strategy),
      column(({ run }) => run.traceContext),
      column(({ run }) => run.agentVersion),
      column(({ run }) => run.manifestHash),
      column(({ run }) => run.draft),
    ],
  );
  return rows.map(startOutcome);
}

function startOutcome(row: StartRow): StartOutcome {
  const active = { id: row.active_id!, status: row.active_status! };
  if (row.outcome === 'active') return { outcome: 'active', active };
  if (row.outcome === 'queued') return { outcome: 'queued', active, position: row.going! };
  if (row.outcome === 'over_limit') return { outcome: 'over_limit', going: row.going! };
  return { outcome: 'started' };
}

async function startRow(db: Queryable, run: NewRun, lease: Lease, seqReserved: number): Promise<StartOutcome> {
  return (await startRows(db, [{ run, lease, seqReserved }]))[0]!;
}

/**
 * `rollback`, in the transaction of the run that replaces it: under the thread's lock, the queued runs are cancelled
 * and the active run is removed with everything it left (its events, nodes and records go with its row; its
 * checkpoints, their writes, and the values only they referred to are deleted), unless a person decided at one of
 * its stops or one of its tool calls ran. Its process hears of the cancel and stops. Returns why not, or undefined.
 */
async function rollBack(client: pg.PoolClient, run: NewRun): Promise<StartOutcome | undefined> {
  await client.query(`SELECT 1 FROM svc_threads WHERE id = $1 FOR UPDATE`, [run.threadId]);
  const { rows } = await client.query<{
    id: string;
    status: RunStatus;
    decided: boolean;
    tool_ran: boolean;
  }>(
    `SELECT r.id, r.status,
            EXISTS (SELECT 1 FROM svc_gate_decisions d WHERE d.run_id = r.id) AS decided,
            EXISTS (SELECT 1 FROM svc_tool_calls c WHERE c.run_id = r.id AND c.started_at IS NOT NULL) AS tool_ran
       FROM svc_runs r WHERE r.thread_id = $1 AND r.status IN ('running', 'waiting_approval')
      ORDER BY r.started_at DESC LIMIT 1`,
    [run.threadId],
  );
  const active = rows[0];
  if (active && (active.decided || active.tool_ran)) {
    return {
      outcome: 'not_rollbackable',
      active: { id: active.id, status: active.status },
      why: active.decided ? 'decision' : 'tool_call',
    };
  }
  await client.query(
    `SELECT svc_cancel_run(id, $2) FROM svc_runs WHERE thread_id = $1 AND status = 'queued' ORDER BY queued_at`,
    [run.threadId, `rolled back by run ${run.id}`],
  );
  if (!active) return undefined;
  // Its checkpoints are those whose `run_id` channel names it (its value, a JSON string, is kept as a blob).
  const { rows: its } = await client.query<{ checkpoint_id: string }>(
    `SELECT c.checkpoint_id FROM ${CHECKPOINT_TABLES.checkpoints} c
       JOIN ${CHECKPOINT_TABLES.blobs} b
         ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'run_id'
        AND b.version = c.checkpoint->'channel_versions'->>'run_id'
      WHERE c.thread_id = $2 AND c.checkpoint_ns = '' AND b.type = 'json'
        AND convert_from(b.blob, 'UTF8') = to_json($1::text)::text`,
    [active.id, run.threadId],
  );
  await deleteCheckpoints(
    client,
    run.threadId,
    its.map((c) => c.checkpoint_id),
  );
  await client.query(
    `WITH gone AS (DELETE FROM svc_runs WHERE id = $1 RETURNING id) SELECT pg_notify($2, id::text) FROM gone`,
    [active.id, CANCEL_CHANNEL],
  );
  return undefined;
}

/**
 * Runs: the engine's store of their rows (RunStore, storage/types.ts) and what the API reads of them. Every status
 * change is one statement guarded by the status it expects (contracts/run-transitions.ts), so two processes never
 * both make it; a leg's end stores its last events in the same statement. `leases` carries the statements that keep
 * and take over leases (a connection of their own in a server: a busy pool never delays a renewal past a lease).
 */
export function runsRepository(pool: Pool, leases: Pool = pool) {
  // Runs started while others start go in one statement together (startRows).
  const starts = new StatementGroups<Starting, StartOutcome>((group) => startRows(pool, group), 2, 100);
  const store = {
    async start(run: NewRun, lease: Lease, seqReserved: number): Promise<StartOutcome> {
      if (run.strategy === 'rollback' && !run.newThread) {
        return withTransaction(pool, async (client) => {
          const removed = await rollBack(client, run);
          if (removed) return removed;
          return startRow(client, { ...run, strategy: 'reject' }, lease, seqReserved);
        });
      }
      if (run.comparisonOf || run.experimentItem) {
        // A comparison is one from its first row: no execution, here or after a takeover, ever runs it as a plain run.
        return withTransaction(pool, async (client) => {
          const outcome = await startRow(client, run, lease, seqReserved);
          if (outcome.outcome !== 'started' && outcome.outcome !== 'queued') return outcome;
          await client.query(`UPDATE svc_runs SET comparison_of = $2, experiment_item = $3 WHERE id = $1`, [
            run.id,
            run.comparisonOf,
            run.experimentItem?.itemId ?? null,
          ]);
          if (run.newThread) {
            await client.query(`UPDATE svc_threads SET comparison_of = $2, experiment_id = $3 WHERE id = $1`, [
              run.threadId,
              run.comparisonOf,
              run.experimentItem?.experimentId ?? null,
            ]);
          }
          return outcome;
        });
      }
      return starts.add({ run, lease, seqReserved });
    },

    async claimQueued(lease: Lease, seqReserved: number, threadId?: string): Promise<RunRecord | undefined> {
      const head = await pool.query<{ thread_id: string }>(
        `SELECT q.thread_id FROM svc_runs q
          WHERE q.status = 'queued' AND ($1::uuid IS NULL OR q.thread_id = $1) AND q.imported_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM svc_runs a
                             WHERE a.thread_id = q.thread_id AND a.status IN ('running', 'waiting_approval'))
          ORDER BY q.queued_at LIMIT 1`,
        [threadId ?? null],
      );
      const thread = head.rows[0]?.thread_id;
      if (!thread) return undefined;
      // Looked at again under the thread's lock, which a start holds too: the line's head, if nothing else runs.
      return withTransaction(pool, async (client) => {
        await client.query(`SELECT 1 FROM svc_threads WHERE id = $1 FOR UPDATE`, [thread]);
        const { rows } = await client.query<RunRow>(
          `WITH claimed AS (
             UPDATE svc_runs SET status = 'running', started_at = now(), owner_id = $2,
                    lease_until = now() + make_interval(secs => $3), attempts = 1, handovers = 0,
                    seq_reserved = GREATEST(seq_reserved, event_seq + $4)
              WHERE id = (SELECT id FROM svc_runs WHERE thread_id = $1 AND status = 'queued' AND imported_at IS NULL
                           ORDER BY queued_at LIMIT 1)
                AND ${statusGuard('dequeue')}
                AND NOT EXISTS (SELECT 1 FROM svc_runs a
                                 WHERE a.thread_id = $1 AND a.status IN ('running', 'waiting_approval'))
              RETURNING *
           ), named AS (
             UPDATE svc_threads SET last_message = c.message, model = c.model, updated_at = now()
               FROM claimed c WHERE svc_threads.id = c.thread_id
           )
           SELECT ${COLUMNS} FROM claimed r JOIN svc_threads t ON t.id = r.thread_id`,
          [thread, lease.owner, lease.leaseS, seqReserved],
        );
        return rows[0] && toRecord(rows[0]);
      });
    },

    async get(runId: string): Promise<RunRecord | undefined> {
      const { rows } = await pool.query<RunRow>(`${SELECT_RUN} WHERE r.id = $1`, [runId]);
      return rows[0] && toRecord(rows[0]);
    },

    async progress(runId: string): Promise<RunProgress | undefined> {
      const { rows } = await pool.query<{
        status: RunStatus;
        event_seq: number;
        executing: boolean;
        imported: boolean;
      }>(
        `SELECT status, event_seq, owner_id IS NOT NULL AS executing, imported_at IS NOT NULL AS imported
           FROM svc_runs WHERE id = $1`,
        [runId],
      );
      const row = rows[0];
      // A queued run will be executed: a reader waits for it. An imported one never is: its stored events are all.
      const executing = !row?.imported && ((row?.status === 'running' && row.executing) || row?.status === 'queued');
      return row && { status: row.status, eventSeq: row.event_seq, executing };
    },

    async claimLapsed(lease: Lease): Promise<RunRecord | undefined> {
      const { rows } = await leases.query<RunRow>(
        `WITH claimed AS (
           UPDATE svc_runs SET owner_id = $1, lease_until = now() + make_interval(secs => $2), attempts = attempts + 1
            WHERE id = (SELECT id FROM svc_runs WHERE status = 'running' AND lease_until < now() AND imported_at IS NULL
                         ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED)
              AND status = 'running' AND lease_until < now()
            RETURNING *
         )
         SELECT ${COLUMNS} FROM claimed r JOIN svc_threads t ON t.id = r.thread_id`,
        [lease.owner, lease.leaseS],
      );
      return rows[0] && toRecord(rows[0]);
    },

    async renewLeases(lease: Lease): Promise<string[]> {
      const { rows } = await leases.query<{ id: string }>(
        `UPDATE svc_runs SET lease_until = now() + make_interval(secs => $2)
          WHERE owner_id = $1 AND status = 'running' RETURNING id`,
        [lease.owner, lease.leaseS],
      );
      return rows.map((r) => r.id);
    },

    async releaseLeases(owner: string, only?: readonly string[]): Promise<void> {
      await leases.query(
        `UPDATE svc_runs SET lease_until = now() - interval '1 millisecond'
          WHERE owner_id = $1 AND status = 'running' AND ($2::uuid[] IS NULL OR id = ANY($2::uuid[]))`,
        [owner, only ?? null],
      );
    },

    async handOver(owner: string): Promise<void> {
      await leases.query(
        `UPDATE svc_runs SET lease_until = now() - interval '1 millisecond', handovers = handovers + 1
          WHERE owner_id = $1 AND status = 'running'`,
        [owner],
      );
    },

    async reserveSeq(runId: string, holder: LegHolder, upTo: number): Promise<void> {
      await pool.query(
        `UPDATE svc_runs SET seq_reserved = GREATEST(seq_reserved, $3)
          WHERE id = $1 AND owner_id = $2 AND attempts = $4`,
        [runId, holder.owner, upTo, holder.attempt],
      );
    },

    async pause(runId: string, holder: LegHolder, pause: PauseAtGate, events: NewEvent[]): Promise<boolean> {
      const last = events.at(-1)!;
      const [sql, params] = withEvents(
        `WITH changed AS (
           UPDATE svc_runs SET status = 'waiting_approval', pending_gate = $3, event_seq = $4,
                  owner_id = NULL, lease_until = NULL, resume_decision = NULL,
                  gate_waiting_since = $5, gate_expires_at = $6, gate_checkpoint_id = $7
            WHERE id = $1 AND owner_id = $2 AND attempts = $8 AND ${statusGuard('pause')}
            RETURNING id
         ), ${STORE_FINAL_EVENTS}
         ${ENDED}`,
        [
          runId,
          holder.owner,
          storableJson(pause.gate),
          last.seq,
          pause.gate.waiting_since ? new Date(pause.gate.waiting_since) : new Date(),
          pause.expiresAt,
          pause.checkpointId,
          holder.attempt,
        ],
        events,
      );
      const { rows } = await pool.query<{ n: number }>(prepared(sql), params);
      return rows[0]!.n > 0;
    },

    async finish(runId: string, holder: LegHolder, end: RunEnd, events: NewEvent[]): Promise<boolean> {
      const last = events.at(-1)!;
      const transition = end.status === 'completed' ? 'complete' : end.status === 'rejected' ? 'reject' : 'fail';
      const [sql, params] = withEvents(
        `WITH changed AS (
           UPDATE svc_runs SET status = $3, output = COALESCE($4, output), error_detail = $5, event_seq = $6,
                  end_reason = $7, finished_at = now(), owner_id = NULL, lease_until = NULL, resume_decision = NULL
            WHERE id = $1 AND owner_id = $2 AND attempts = $8 AND ${statusGuard(transition)}
            RETURNING id
         ), closed AS (
           -- A failed run leaves no node open.
           UPDATE svc_run_nodes SET status = 'error', exited_at = extract(epoch FROM now())
            WHERE run_id = $1 AND exited_at IS NULL AND $3 = 'error' AND EXISTS (SELECT 1 FROM changed)
         ), ${STORE_FINAL_EVENTS}
         ${ENDED}`,
        [
          runId,
          holder.owner,
          end.status,
          storable(end.output ?? null),
          storable(end.errorDetail ?? null),
          last.seq,
          storable(end.endReason ?? null),
          holder.attempt,
        ],
        events,
      );
      const { rows } = await pool.query<{ n: number }>(prepared(sql), params);
      return rows[0]!.n > 0;
    },

    async cancel(runId: string, reason: string | null): Promise<boolean> {
      // The run's run_cancelled is stored with the change, after every id its executing process may hand out, so a
      // reader finds the run's end wherever it reads; that process hands the stored event to its own readers.
      const { rows } = await pool.query<{ cancelled: boolean }>(`SELECT svc_cancel_run($1, $2) AS cancelled`, [
        runId,
        storable(reason),
      ]);
      return rows[0]!.cancelled;
    },

    async addRoute(runId: string, route: RouteMatch): Promise<void> {
      // Once, however often it is written: a write tried again after a lost answer finds it there.
      await pool.query(`UPDATE svc_runs SET routes = routes || $2::jsonb WHERE id = $1 AND NOT routes @> $2::jsonb`, [
        runId,
        storableJson([route]),
      ]);
    },

    atStop<T>(runId: string, work: (stop: StopTx | undefined) => Promise<T>): Promise<T> {
      return withTransaction(pool, async (client) => {
        const { rows } = await client.query<RunRow>(
          `SELECT ${COLUMNS} FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id WHERE r.id = $1 FOR UPDATE OF r`,
          [runId],
        );
        const row = rows[0];
        const waiting = row?.status === 'waiting_approval' && row.pending_gate !== null;
        return work(waiting ? stopTx(client, row) : undefined);
      });
    },

    atExpiredStop<T>(work: (stop: StopTx) => Promise<T>): Promise<T | undefined> {
      return withTransaction(pool, async (client) => {
        const { rows } = await client.query<RunRow>(
          `SELECT ${COLUMNS} FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id
            WHERE r.status = 'waiting_approval' AND r.gate_expires_at <= now() AND r.pending_gate IS NOT NULL
              AND r.imported_at IS NULL
            ORDER BY r.gate_expires_at LIMIT 1
            FOR UPDATE OF r SKIP LOCKED`,
        );
        return rows[0] ? work(stopTx(client, rows[0])) : undefined;
      });
    },
  } satisfies RunStore;

  return {
    ...store,

    /** The run as the API shows it. */
    async detail(runId: string): Promise<StoredRun | undefined> {
      const { rows } = await pool.query<RunRow>(`${SELECT_RUN} WHERE r.id = $1`, [runId]);
      return rows[0] && toStored(rows[0]);
    },

    async listByThread(threadId: string): Promise<StoredRun[]> {
      const { rows } = await pool.query<RunRow>(
        `${SELECT_RUN} WHERE r.thread_id = $1 ORDER BY r.started_at DESC, r.id`,
        [threadId],
      );
      return rows.map(toStored);
    },

    async waitingInThread(threadId: string): Promise<StoredRun | undefined> {
      const { rows } = await pool.query<RunRow>(
        `${SELECT_RUN} WHERE r.thread_id = $1 AND r.status = 'waiting_approval' ORDER BY r.started_at DESC LIMIT 1`,
        [threadId],
      );
      return rows[0] && toStored(rows[0]);
    },

    async activeInThread(threadId: string): Promise<StoredRun | undefined> {
      const { rows } = await pool.query<RunRow>(
        `${SELECT_RUN} WHERE r.thread_id = $1 AND r.status IN ('running', 'waiting_approval', 'queued')
          ORDER BY r.status = 'queued', r.started_at DESC LIMIT 1`,
        [threadId],
      );
      return rows[0] && toStored(rows[0]);
    },

    async nodes(runId: string): Promise<RunNode[]> {
      const { rows } = await pool.query<RunNode>(
        `SELECT node_id, status, output, entered_at, exited_at, queue_wait_ms, prompt_tokens, output_tokens, warnings,
                thinking, first_token_at
           FROM svc_run_nodes WHERE run_id = $1 ORDER BY id`,
        [runId],
      );
      return rows;
    },
  };
}

export type RunsRepository = ReturnType<typeof runsRepository>;
