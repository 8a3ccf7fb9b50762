import type { GateApprovals, GateDecisionKind, GateDecisionRecord, PendingGate } from '../contracts/runs';
import type { Role } from '../contracts/tenancy';
import type { PolicySource } from '../contracts/tools';
import type { Pool } from './pool';

interface DecisionRow {
  id: string;
  run_id: string;
  thread_id: string;
  gate: string;
  decision: GateDecisionKind;
  decided_by: string | null;
  decided_by_name: string;
  role: Role | null;
  reason: string | null;
  edits: Record<string, string> | null;
  response: string | null;
  outcome: 'approve' | 'reject' | 'route' | null;
  route_to: string | null;
  tool_call_id: string | null;
  arguments: string | null;
  arguments_sha256: string | null;
  policy_source: PolicySource | null;
  agent_version: string | null;
  via: 'slack' | 'email' | null;
  decided_at: Date;
  imported: boolean;
}

const toRecord = (row: DecisionRow): GateDecisionRecord => ({
  id: String(row.id),
  run_id: row.run_id,
  thread_id: row.thread_id,
  gate: row.gate,
  decision: row.decision,
  decided_by: { id: row.decided_by, name: row.decided_by_name },
  role: row.role,
  reason: row.reason,
  edits: row.edits,
  response: row.response,
  outcome: row.outcome,
  route_to: row.route_to,
  tool_call_id: row.tool_call_id,
  arguments: row.arguments,
  arguments_sha256: row.arguments_sha256,
  policy_source: row.policy_source,
  agent_version: row.agent_version,
  via: row.via ?? null,
  decided_at: row.decided_at.toISOString(),
  imported: row.imported,
});

const SELECT_DECISION = `
  SELECT d.id, d.run_id, d.thread_id, d.gate, d.decision, d.decided_by, d.decided_by_name, d.role, d.reason, d.edits,
         d.response, d.outcome, d.route_to, d.tool_call_id, d.arguments, d.arguments_sha256, d.policy_source, d.via,
         d.decided_at,
         (SELECT r.agent_version FROM svc_runs r WHERE r.id = d.run_id) AS agent_version,
         EXISTS (SELECT 1 FROM svc_runs r WHERE r.id = d.run_id AND r.imported_at IS NOT NULL) AS imported
    FROM svc_gate_decisions d`;

/**
 * The round of one stop at a gate (the gate_waiting event `wait_seq`) that approvals count in: each edit starts a new
 * one, since approvals given before it were of other text.
 */
const ROUND_OF_STOP = `
  SELECT COALESCE(max(round), 0) FROM svc_gate_decisions WHERE run_id = $1 AND wait_seq = $2`;

/**
 * Approvals of the current round of one stop at a gate, oldest first: in the order of the records (`d.id`, qualified,
 * since an ORDER BY name would otherwise mean the output column `id`, the decider).
 */
const APPROVALS_OF_STOP = `
  SELECT d.decided_by AS id, d.decided_by_name AS name, d.decided_at AS at
    FROM svc_gate_decisions d
   WHERE d.run_id = $1 AND d.wait_seq = $2 AND d.decision IN ('approve', 'edit') AND d.round = (${ROUND_OF_STOP})
   ORDER BY d.id`;

interface ApprovalRow {
  id: string | null;
  name: string;
  at: Date;
}

const approvalsFrom = (rows: ApprovalRow[], needed: number): GateApprovals => ({
  needed,
  given: rows.length,
  by: rows.map((r) => ({ id: r.id, name: r.name, at: new Date(r.at).toISOString() })),
});

/** The decision that ended a stop at a gate, for a 409 that tells who acted first, and when. */
export interface LastDecision {
  decision: GateDecisionKind;
  by: string;
  at: string;
}

interface LastDecisionRow {
  decision: GateDecisionKind;
  decided_by_name: string;
  decided_at: Date;
}

const LAST_DECISION = `SELECT decision, decided_by_name, decided_at FROM svc_gate_decisions`;

const toLast = (row: LastDecisionRow): LastDecision => ({
  decision: row.decision,
  by: row.decided_by_name,
  at: row.decided_at.toISOString(),
});

/** A gate waiting for a decision, with what the approvals inbox shows. */
export interface WaitingGate {
  run_id: string;
  thread_id: string;
  agent: string;
  message: string | null;
  project_id: string;
  project_name: string;
  pending_gate: PendingGate;
  wait_seq: number;
  /** The stop's round as people name it (contracts/stops.ts). */
  round: number;
  waiting_since: string;
  expires_at: string | null;
  approvals: { id: string | null; name: string; at: string }[];
}

/**
 * The record of gate decisions (svc_gate_decisions), as the API and the inbox read it. Decisions are recorded by the
 * run engine, with the claim of the run they resume, in one transaction under the run's row lock
 * (runs.repository.ts atStop). Records are only ever inserted (a trigger refuses updates); they go with their thread.
 */
export function gateDecisionsRepository(pool: Pool) {
  return {
    /** The latest decision taken at a gate of the thread: who acted, when, for the 409 of a decision come too late. */
    async latestAt(threadId: string, gate: string): Promise<LastDecision | undefined> {
      const { rows } = await pool.query<LastDecisionRow>(
        `${LAST_DECISION} WHERE thread_id = $1 AND gate = $2 ORDER BY id DESC LIMIT 1`,
        [threadId, gate],
      );
      return rows[0] && toLast(rows[0]);
    },

    /** The last decision taken at one stop (the run's wait `waitSeq`). */
    async latestAtStop(runId: string, waitSeq: number): Promise<LastDecision | undefined> {
      const { rows } = await pool.query<LastDecisionRow>(
        `${LAST_DECISION} WHERE run_id = $1 AND wait_seq = $2 ORDER BY id DESC LIMIT 1`,
        [runId, waitSeq],
      );
      return rows[0] && toLast(rows[0]);
    },

    /** The last decision on a tool call of the thread's runs. */
    async latestForCall(threadId: string, callId: string): Promise<LastDecision | undefined> {
      const { rows } = await pool.query<LastDecisionRow>(
        `${LAST_DECISION} WHERE thread_id = $1 AND tool_call_id = $2 ORDER BY id DESC LIMIT 1`,
        [threadId, callId],
      );
      return rows[0] && toLast(rows[0]);
    },

    async listByRun(runId: string): Promise<GateDecisionRecord[]> {
      const { rows } = await pool.query<DecisionRow>(`${SELECT_DECISION} WHERE run_id = $1 ORDER BY id`, [runId]);
      return rows.map(toRecord);
    },

    async listByThread(threadId: string): Promise<GateDecisionRecord[]> {
      const { rows } = await pool.query<DecisionRow>(`${SELECT_DECISION} WHERE thread_id = $1 ORDER BY id`, [threadId]);
      return rows.map(toRecord);
    },

    /** The approvals given so far at the run's current stop at its gate. */
    /** The stop's round as people name it: 1, and one more for each edit taken at it (contracts/stops.ts). */
    async roundOf(runId: string, waitSeq: number): Promise<number> {
      const { rows } = await pool.query<{ round: number }>(`SELECT (${ROUND_OF_STOP}) + 1 AS round`, [runId, waitSeq]);
      return rows[0]!.round;
    },

    /** The decisions taken at one stop, oldest first. */
    async listAtStop(runId: string, waitSeq: number): Promise<GateDecisionRecord[]> {
      const { rows } = await pool.query<DecisionRow>(
        `${SELECT_DECISION} WHERE d.run_id = $1 AND d.wait_seq = $2 ORDER BY d.id`,
        [runId, waitSeq],
      );
      return rows.map(toRecord);
    },

    /** How many approvals of the stop's current round came through Slack. */
    async approvalsViaSlack(runId: string, waitSeq: number): Promise<number> {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::integer AS n FROM svc_gate_decisions d
          WHERE d.run_id = $1 AND d.wait_seq = $2 AND d.decision IN ('approve', 'edit') AND d.via = 'slack'
            AND d.round = (${ROUND_OF_STOP})`,
        [runId, waitSeq],
      );
      return rows[0]?.n ?? 0;
    },

    async approvalsOf(runId: string, waitSeq: number, needed: number): Promise<GateApprovals> {
      const { rows } = await pool.query<ApprovalRow>(APPROVALS_OF_STOP, [runId, waitSeq]);
      return approvalsFrom(rows, needed);
    },

    /** Gates waiting in the given projects (every project when null), oldest first, with their approvals so far. */
    async waiting(projectIds: string[] | null): Promise<WaitingGate[]> {
      const { rows } = await pool.query<
        Omit<WaitingGate, 'waiting_since' | 'expires_at'> & {
          waiting_since: Date;
          expires_at: Date | null;
        }
      >(
        `SELECT r.id AS run_id, r.thread_id, r.agent, r.message, p.id AS project_id, p.name AS project_name, r.pending_gate,
                r.event_seq AS wait_seq, COALESCE(r.gate_waiting_since, r.started_at) AS waiting_since,
                r.gate_expires_at AS expires_at,
                (SELECT COALESCE(max(x.round), 0) + 1 FROM svc_gate_decisions x
                  WHERE x.run_id = r.id AND x.wait_seq = r.event_seq) AS round,
                COALESCE((SELECT json_agg(json_build_object('id', d.decided_by, 'name', d.decided_by_name,
                                                            'at', d.decided_at) ORDER BY d.id)
                            FROM svc_gate_decisions d
                           WHERE d.run_id = r.id AND d.wait_seq = r.event_seq AND d.decision IN ('approve', 'edit')
                             AND d.round = (SELECT COALESCE(max(x.round), 0) FROM svc_gate_decisions x
                                             WHERE x.run_id = r.id AND x.wait_seq = r.event_seq)),
                         '[]'::json) AS approvals
           FROM svc_runs r
           JOIN svc_threads t ON t.id = r.thread_id
           JOIN svc_projects p ON p.id = t.project_id
          WHERE r.status = 'waiting_approval' AND r.pending_gate IS NOT NULL
            -- An imported run's gate is history: nobody decides it here (0017_imported_threads).
            AND r.imported_at IS NULL
            AND ($1::uuid[] IS NULL OR p.id = ANY($1::uuid[]))
          ORDER BY waiting_since, r.id
          LIMIT 500`,
        [projectIds],
      );
      return rows.map((row) => ({
        ...row,
        waiting_since: row.waiting_since.toISOString(),
        expires_at: row.expires_at?.toISOString() ?? null,
        approvals: row.approvals.map((a) => ({ ...a, at: new Date(a.at).toISOString() })),
      }));
    },
  };
}

export type GateDecisionsRepository = ReturnType<typeof gateDecisionsRepository>;
