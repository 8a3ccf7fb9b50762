import type pg from 'pg';
import type { ExportedDecision, ExportedRun, ThreadExport } from '../contracts/thread-transfer';
import { CHECKPOINT_TABLES as cp } from './checkpointer';
import { withTransaction, type Pool } from './pool';

/** A moment as PostgreSQL keeps it, to the microsecond, in UTC: what an export writes, so an import keeps it whole. */
const at = (column: string, as = column.replace(/^\w+\./, '')) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ${as}`;

/** What an export reads of a thread, before the service writes the document around it. */
export type ThreadRecords = Pick<ThreadExport, 'thread' | 'runs' | 'decisions' | 'checkpoints'>;

/** The rows an import writes, ids already as they are to be (remapped or kept) by the service. */
export interface ImportRows {
  thread: Omit<ThreadExport['thread'], 'imported'>;
  runs: ExportedRun[];
  /** `id` null: the decision gets a new id. */
  decisions: (Omit<ExportedDecision, 'id'> & { id: string | null })[];
  checkpoints: ThreadExport['checkpoints'];
}

export interface ImportTarget {
  projectId: string;
  /** The importer: the new thread's maker (its runs name nobody here). */
  createdBy: string;
  /** Where the thread came from: its id there, and when it was exported. */
  from: { threadId: string; exportedAt: string };
}

export type ImportOutcome =
  | { outcome: 'imported' }
  /** Ids kept from the document that are taken here already: nothing was written. */
  | { outcome: 'taken'; taken: string[] }
  /** The database refused a row (two rows under one key, a value out of range): nothing was written. */
  | { outcome: 'refused'; detail: string };

const PRIMARY_KEYS: Record<string, string> = {
  svc_threads_pkey: 'the thread id',
  svc_runs_pkey: 'a run id',
  svc_gate_decisions_pkey: 'a decision id',
  checkpoints_pkey: "the thread's checkpoints",
};

/** Rows grouped by their run, in the order they were read. */
function byRun<T extends { run_id: string }>(rows: T[]): Map<string, Omit<T, 'run_id'>[]> {
  const groups = new Map<string, Omit<T, 'run_id'>[]>();
  for (const { run_id, ...row } of rows) {
    const group = groups.get(run_id) ?? [];
    group.push(row);
    groups.set(run_id, group);
  }
  return groups;
}

const base64 = (blob: Buffer | null) => (blob === null ? null : blob.toString('base64'));

/** Each row with its place, so that rows written in one statement keep their order (node rows, decisions). */
const ordered = <T extends object>(rows: T[]) => JSON.stringify(rows.map((row, ord) => ({ ...row, ord })));

interface ThreadRow extends Omit<ThreadRecords['thread'], 'imported'> {
  imported_from: string | null;
  imported_exported_at: string | null;
  imported_at: string | null;
}

async function readRecords(client: pg.PoolClient, threadId: string): Promise<ThreadRecords | undefined> {
  const thread = await client.query<ThreadRow>(
    `SELECT id, name, agent, model, last_message, ${at('created_at')}, ${at('updated_at')}, metadata, draft,
            comparison_of, imported_from, ${at('imported_exported_at')}, ${at('imported_at')}
       FROM svc_threads WHERE id = $1`,
    [threadId],
  );
  const row = thread.rows[0];
  if (!row) return undefined;
  const { imported_from, imported_exported_at, imported_at, ...fields } = row;
  const runIds = `SELECT id FROM svc_runs WHERE thread_id = $1`;
  // One after the other: one connection, one snapshot.
  const runs = await client.query<Omit<ExportedRun, 'nodes' | 'events' | 'tool_calls'>>(
    `SELECT id, agent, agent_version, manifest_hash, model, status, message, output, error_detail, end_reason,
            ${at('started_at')}, ${at('finished_at')}, ${at('queued_at')}, routes, event_seq, seq_reserved, attempts,
            handovers, pending_gate, ${at('gate_waiting_since')}, ${at('gate_expires_at')}, gate_checkpoint_id,
            forked_from, resume_decision, local_runtime, trace_context, comparison_of
       FROM svc_runs WHERE thread_id = $1 ORDER BY started_at, id`,
    [threadId],
  );
  const nodes = await client.query<ExportedRun['nodes'][number] & { run_id: string }>(
    `SELECT run_id, key, node_id, status, output, entered_at, exited_at, first_token_at, queue_wait_ms, prompt_tokens,
            output_tokens, warnings, thinking
       FROM svc_run_nodes WHERE run_id IN (${runIds}) ORDER BY id`,
    [threadId],
  );
  const events = await client.query<ExportedRun['events'][number] & { run_id: string }>(
    `SELECT run_id, seq, seq_last, type, data FROM svc_run_events WHERE run_id IN (${runIds}) ORDER BY run_id, seq`,
    [threadId],
  );
  const calls = await client.query<ExportedRun['tool_calls'][number] & { run_id: string }>(
    `SELECT run_id, id, node, tool, arguments, arguments_sha256, policy, rerunnable, decision, attempts,
            ${at('started_at')}, result, is_error, ${at('finished_at')}, ${at('created_at')}, replay
       FROM svc_tool_calls WHERE run_id IN (${runIds}) ORDER BY created_at, id`,
    [threadId],
  );
  const decisions = await client.query<ExportedDecision>(
    `SELECT id::text AS id, run_id, gate, wait_seq, round, decision, decided_by, decided_by_name, role, reason, edits,
            response, outcome, route_to, tool_call_id, arguments, arguments_sha256, policy_source, via,
            ${at('decided_at')}
       FROM svc_gate_decisions WHERE thread_id = $1 ORDER BY id`,
    [threadId],
  );
  const checkpoints = await client.query<ThreadExport['checkpoints']['checkpoints'][number]>(
    `SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata
       FROM ${cp.checkpoints} WHERE thread_id = $1 ORDER BY checkpoint_ns, checkpoint_id`,
    [threadId],
  );
  const blobs = await client.query<{
    checkpoint_ns: string;
    channel: string;
    version: string;
    type: string;
    blob: Buffer | null;
  }>(
    `SELECT checkpoint_ns, channel, version, type, blob FROM ${cp.blobs} WHERE thread_id = $1
        ORDER BY checkpoint_ns, channel, version`,
    [threadId],
  );
  const writes = await client.query<{
    checkpoint_ns: string;
    checkpoint_id: string;
    task_id: string;
    idx: number;
    channel: string;
    type: string | null;
    blob: Buffer;
  }>(
    `SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob FROM ${cp.writes} WHERE thread_id = $1
        ORDER BY checkpoint_ns, checkpoint_id, task_id, idx`,
    [threadId],
  );
  const nodesOf = byRun(nodes.rows);
  const eventsOf = byRun(events.rows);
  const callsOf = byRun(calls.rows);
  return {
    thread: {
      ...fields,
      imported:
        imported_from && imported_exported_at && imported_at
          ? { from_thread_id: imported_from, exported_at: imported_exported_at, imported_at }
          : null,
    },
    runs: runs.rows.map((run) => ({
      ...run,
      nodes: nodesOf.get(run.id) ?? [],
      events: eventsOf.get(run.id) ?? [],
      tool_calls: callsOf.get(run.id) ?? [],
    })),
    decisions: decisions.rows,
    checkpoints: {
      checkpoints: checkpoints.rows,
      blobs: blobs.rows.map((b) => ({ ...b, blob: base64(b.blob) })),
      writes: writes.rows.map((w) => ({ ...w, blob: base64(w.blob)! })),
    },
  };
}

/** The ids of `rows` the database holds already (keep_ids): the thread, its runs, its decisions, its checkpoints. */
async function takenIds(client: pg.PoolClient, rows: ImportRows): Promise<string[]> {
  const { rows: found } = await client.query<{ what: string }>(
    `SELECT 'thread ' || id AS what FROM svc_threads WHERE id = $1
     UNION ALL SELECT 'thread ' || id FROM svc_lg_drafts WHERE id = $1
     UNION ALL (SELECT DISTINCT 'checkpoints of thread ' || thread_id FROM ${cp.checkpoints} WHERE thread_id = $1::text)
     UNION ALL SELECT 'run ' || id FROM svc_runs WHERE id = ANY($2::uuid[])
     UNION ALL SELECT 'decision ' || id FROM svc_gate_decisions WHERE id = ANY($3::bigint[])`,
    [rows.thread.id, rows.runs.map((r) => r.id), rows.decisions.flatMap((d) => (d.id === null ? [] : [d.id]))],
  );
  return found.map((f) => f.what);
}

async function writeRows(client: pg.PoolClient, rows: ImportRows, target: ImportTarget): Promise<void> {
  const threadId = rows.thread.id;
  const t = rows.thread;
  // Its folder is dropped: a path on the machine it came from.
  await client.query(
    `INSERT INTO svc_threads (id, agent, model, last_message, project_path, project_id, created_by, created_at,
                              updated_at, name, metadata, draft, comparison_of, imported_from, imported_exported_at,
                              imported_at)
     VALUES ($1, $2, $3, $4, NULL, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14, now())`,
    [
      threadId,
      t.agent,
      t.model,
      t.last_message,
      target.projectId,
      target.createdBy,
      t.created_at,
      t.updated_at,
      t.name,
      JSON.stringify(t.metadata),
      t.draft,
      t.comparison_of,
      target.from.threadId,
      target.from.exportedAt,
    ],
  );
  // As they were recorded, marked imported (so no process executes them: runs.repository.ts), with no folder, nobody
  // here who started them, and no experiment of this installation. Their lease never lapses: a process of the release
  // before, which does not know the mark, never takes one over during a rolling upgrade.
  await client.query(
    `INSERT INTO svc_runs (id, thread_id, agent, agent_version, manifest_hash, model, status, message, project_path,
                           created_by, output, error_detail, end_reason, started_at, finished_at, queued_at, routes,
                           event_seq, seq_reserved, attempts, handovers, pending_gate, gate_waiting_since,
                           gate_expires_at, gate_checkpoint_id, forked_from, resume_decision, local_runtime,
                           trace_context, comparison_of, owner_id, lease_until, imported_at)
     SELECT r.id, $2, r.agent, r.agent_version, r.manifest_hash, r.model, r.status, r.message, NULL, NULL, r.output,
            r.error_detail, r.end_reason, r.started_at, r.finished_at, r.queued_at, r.routes, r.event_seq,
            r.seq_reserved, r.attempts, r.handovers, r.pending_gate, r.gate_waiting_since, r.gate_expires_at,
            r.gate_checkpoint_id, r.forked_from, r.resume_decision, r.local_runtime, r.trace_context, r.comparison_of,
            NULL, 'infinity', now()
       FROM jsonb_to_recordset($1::jsonb) AS r(
              id uuid, agent text, agent_version text, manifest_hash text, model text, status text, message text,
              output text, error_detail text, end_reason text, started_at timestamptz, finished_at timestamptz,
              queued_at timestamptz, routes jsonb, event_seq integer, seq_reserved integer, attempts integer,
              handovers integer, pending_gate jsonb, gate_waiting_since timestamptz, gate_expires_at timestamptz,
              gate_checkpoint_id text, forked_from jsonb, resume_decision jsonb, local_runtime boolean,
              trace_context text, comparison_of uuid)`,
    [JSON.stringify(rows.runs.map(({ nodes: _n, events: _e, tool_calls: _c, ...run }) => run)), threadId],
  );
  await client.query(
    `INSERT INTO svc_run_nodes (run_id, key, node_id, status, output, entered_at, exited_at, first_token_at,
                                queue_wait_ms, prompt_tokens, output_tokens, warnings, thinking)
     SELECT n.run_id, n.key, n.node_id, n.status, n.output, n.entered_at, n.exited_at, n.first_token_at,
            n.queue_wait_ms, n.prompt_tokens, n.output_tokens, n.warnings, n.thinking
       FROM jsonb_to_recordset($1::jsonb) AS n(
              run_id uuid, key text, node_id text, status text, output text, entered_at double precision,
              exited_at double precision, first_token_at double precision, queue_wait_ms double precision,
              prompt_tokens integer, output_tokens integer, warnings jsonb, thinking text, ord integer)
      ORDER BY n.ord`,
    [ordered(rows.runs.flatMap((run) => run.nodes.map((node) => ({ ...node, run_id: run.id }))))],
  );
  await client.query(
    `INSERT INTO svc_run_events (run_id, seq, seq_last, type, data)
     SELECT e.run_id, e.seq, e.seq_last, e.type, e.data
       FROM jsonb_to_recordset($1::jsonb) AS e(run_id uuid, seq integer, seq_last integer, type text, data text)`,
    [JSON.stringify(rows.runs.flatMap((run) => run.events.map((event) => ({ ...event, run_id: run.id }))))],
  );
  await client.query(
    `INSERT INTO svc_tool_calls (id, run_id, node, tool, arguments, arguments_sha256, policy, rerunnable, decision,
                                 attempts, started_at, result, is_error, finished_at, created_at, replay)
     SELECT c.id, c.run_id, c.node, c.tool, c.arguments, c.arguments_sha256, c.policy, c.rerunnable, c.decision,
            c.attempts, c.started_at, c.result, c.is_error, c.finished_at, c.created_at, c.replay
       FROM jsonb_to_recordset($1::jsonb) AS c(
              id text, run_id uuid, node text, tool text, arguments text, arguments_sha256 text, policy text,
              rerunnable boolean, decision jsonb, attempts integer, started_at timestamptz, result text,
              is_error boolean, finished_at timestamptz, created_at timestamptz, replay text)`,
    [JSON.stringify(rows.runs.flatMap((run) => run.tool_calls.map((call) => ({ ...call, run_id: run.id }))))],
  );
  // The decisions' triggers fire (webhooks, Slack, mail) and find no project for an imported run: nothing is sent.
  await client.query(
    `INSERT INTO svc_gate_decisions (id, run_id, thread_id, gate, wait_seq, round, decision, decided_by,
                                     decided_by_name, role, reason, edits, response, outcome, route_to, tool_call_id,
                                     arguments, arguments_sha256, policy_source, via, decided_at)
     SELECT COALESCE(d.id, nextval(pg_get_serial_sequence('svc_gate_decisions', 'id'))), d.run_id, $2, d.gate,
            d.wait_seq, d.round, d.decision, d.decided_by, d.decided_by_name, d.role, d.reason, d.edits, d.response,
            d.outcome, d.route_to, d.tool_call_id, d.arguments, d.arguments_sha256, d.policy_source, d.via,
            d.decided_at
       FROM jsonb_to_recordset($1::jsonb) AS d(
              id bigint, run_id uuid, gate text, wait_seq integer, round integer, decision text, decided_by text,
              decided_by_name text, role text, reason text, edits jsonb, response text, outcome text, route_to text,
              tool_call_id text, arguments text, arguments_sha256 text, policy_source text, via text,
              decided_at timestamptz, ord integer)
      ORDER BY d.ord`,
    [ordered(rows.decisions), threadId],
  );
  if (rows.decisions.some((d) => d.id !== null)) {
    // Ids kept from another installation: the sequence goes past them, so that no later decision takes one.
    await client.query(
      `SELECT setval(s, GREATEST((SELECT max(id) FROM svc_gate_decisions), nextval(s)))
         FROM pg_get_serial_sequence('svc_gate_decisions', 'id') AS s`,
    );
  }
  const { checkpoints, blobs, writes } = rows.checkpoints;
  await client.query(
    `INSERT INTO ${cp.checkpoints} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
                                    metadata)
     SELECT $2, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.type, c.checkpoint, c.metadata
       FROM jsonb_to_recordset($1::jsonb) AS c(checkpoint_ns text, checkpoint_id text, parent_checkpoint_id text,
                                               type text, checkpoint jsonb, metadata jsonb)`,
    [JSON.stringify(checkpoints), threadId],
  );
  await client.query(
    `INSERT INTO ${cp.blobs} (thread_id, checkpoint_ns, channel, version, type, blob)
     SELECT $2, b.checkpoint_ns, b.channel, b.version, b.type, decode(b.blob, 'base64')
       FROM jsonb_to_recordset($1::jsonb) AS b(checkpoint_ns text, channel text, version text, type text, blob text)`,
    [JSON.stringify(blobs), threadId],
  );
  await client.query(
    `INSERT INTO ${cp.writes} (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
     SELECT $2, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.type, decode(w.blob, 'base64')
       FROM jsonb_to_recordset($1::jsonb) AS w(checkpoint_ns text, checkpoint_id text, task_id text, idx integer,
                                               channel text, type text, blob text)`,
    [JSON.stringify(writes), threadId],
  );
}

/** A refusal of the database about a row's value or key (classes 22 and 23), as opposed to the database being away. */
function refusal(error: unknown): { code: string; constraint?: string; message: string } | undefined {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown };
  if (typeof e.code !== 'string' || !/^2[23]/.test(e.code)) return undefined;
  return {
    code: e.code,
    constraint: typeof e.constraint === 'string' ? e.constraint : undefined,
    message: String(e.message),
  };
}

/**
 * A thread carried from one installation to another (docs/http-api.md#export-and-import-of-a-thread): everything an
 * export holds, read in one snapshot, and an import written in one transaction.
 */
export function threadTransferRepository(pool: Pool) {
  return {
    /** The thread's rows in one snapshot (a run that goes on meanwhile is read as it stood); undefined: no thread. */
    read(threadId: string): Promise<ThreadRecords | undefined> {
      return withTransaction(pool, async (client) => {
        await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
        return readRecords(client, threadId);
      });
    },

    /**
     * Writes an imported thread, all of it or nothing. `keepIds`: the ids are the document's, and any of them taken
     * here already is answered (`taken`) before anything is written.
     */
    async write(rows: ImportRows, target: ImportTarget, keepIds: boolean): Promise<ImportOutcome> {
      try {
        return await withTransaction(pool, async (client): Promise<ImportOutcome> => {
          if (keepIds) {
            const taken = await takenIds(client, rows);
            if (taken.length) return { outcome: 'taken', taken };
          }
          await writeRows(client, rows, target);
          return { outcome: 'imported' };
        });
      } catch (error) {
        const refused = refusal(error);
        if (!refused) throw error;
        // The same ids written by an import at the same moment.
        const what = refused.code === '23505' && refused.constraint ? PRIMARY_KEYS[refused.constraint] : undefined;
        if (keepIds && what) return { outcome: 'taken', taken: [`${what} (imported at the same moment)`] };
        return { outcome: 'refused', detail: refused.message };
      }
    },
  };
}

export type ThreadTransferRepository = ReturnType<typeof threadTransferRepository>;
