import type {
  GateApprovals,
  GateDecisionKind,
  GateDecisionRecord,
  GateResume,
  PendingGate,
  RunStatus,
} from '../contracts/runs';
import { DEFAULT_PROJECT_ID, type Role } from '../contracts/tenancy';
import { withTransaction, type Pool } from './pool';
import type { Lease } from './runs.repository';
import { storable, storableJson } from './text';

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
  decided_at: Date;
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
  decided_at: row.decided_at.toISOString(),
});

const SELECT_DECISION = `
  SELECT id, run_id, thread_id, gate, decision, decided_by, decided_by_name, role, reason, edits, response, outcome,
         route_to, decided_at
    FROM svc_gate_decisions`;

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

/** Every edit at one stop, oldest first: each was shown to the approvers after it, so together they make the text. */
const EDITS_OF_STOP = `
  SELECT edits FROM svc_gate_decisions WHERE run_id = $1 AND wait_seq = $2 AND decision = 'edit' ORDER BY id`;

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

/** A person's decision at a gate, as the service asks for it. */
export interface NewDecision {
  runId: string;
  gate: string;
  /** The stop at the gate being decided: the gate_waiting event's id (the run's event_seq while it waits). */
  waitSeq: number;
  decision: Exclude<GateDecisionKind, 'expire'>;
  decidedBy: { id: string; name: string };
  role: Role | null;
  reason: string | null;
  edits: Record<string, string> | null;
  response: string | null;
  /** respond: the phase that runs again. */
  routeTo: string | null;
  approvalsNeeded: number;
}

export type DecideResult =
  /** The gate is no longer waiting at that stop (decided, cancelled, or reached again since). */
  | { outcome: 'stale'; last?: LastDecision }
  /** This person has already approved this stop at the gate. */
  | { outcome: 'duplicate' }
  /** Recorded; the gate waits for more approvals. */
  | { outcome: 'waiting'; approvals: GateApprovals }
  /** Recorded, and the run is claimed to resume with `resume` (leased to the caller's process). */
  | { outcome: 'resumed'; approvals: GateApprovals; resume: GateResume; decisionId: string };

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

/** A waiting gate whose deadline passed, claimed by this process to resume with its expiry. */
export interface ExpiredGate {
  runId: string;
  threadId: string;
  agent: string;
  model: string | null;
  projectId: string | null;
  gate: PendingGate;
  eventSeq: number;
  resume: GateResume;
}

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
  waiting_since: string;
  expires_at: string | null;
  approvals: { id: string | null; name: string; at: string }[];
}

/**
 * Gate decisions (svc_gate_decisions) and the run-row changes they make. A decision and the claim of the run that it
 * resumes are one transaction under the run's row lock: two approvers at once are counted one after the other, and
 * exactly one of them resumes the run. Records are only ever inserted (a trigger refuses updates); they go with their
 * thread.
 */
export function gateDecisionsRepository(pool: Pool) {
  /** The claim of a waiting run for a resume: status back to running, leased, the decision kept for a takeover. */
  const CLAIM = `
    UPDATE svc_runs SET status = 'running', pending_gate = NULL, owner_id = $2,
           lease_until = now() + make_interval(secs => $3), resume_decision = $4, attempts = 1,
           seq_reserved = GREATEST(seq_reserved, $5), gate_expires_at = NULL
     WHERE id = $1 AND status = 'waiting_approval'`;

  return {
    async decide(input: NewDecision, lease: Lease, seqReserved: number): Promise<DecideResult> {
      return withTransaction(pool, async (client) => {
        const { rows: runRows } = await client.query<{ status: RunStatus; event_seq: number; pending: PendingGate }>(
          `SELECT status, event_seq, pending_gate AS pending FROM svc_runs WHERE id = $1 FOR UPDATE`,
          [input.runId],
        );
        const run = runRows[0];
        if (
          !run ||
          run.status !== 'waiting_approval' ||
          run.event_seq !== input.waitSeq ||
          run.pending?.node !== input.gate
        ) {
          const { rows: last } = await client.query<LastDecisionRow>(
            `${LAST_DECISION} WHERE run_id = $1 AND gate = $2
              ORDER BY id DESC LIMIT 1`,
            [input.runId, input.gate],
          );
          return { outcome: 'stale', last: last[0] && toLast(last[0]) };
        }
        const { rows: roundRows } = await client.query<{ round: number }>(`SELECT (${ROUND_OF_STOP}) AS round`, [
          input.runId,
          input.waitSeq,
        ]);
        // An edit changes the text the gate shows: approvals given before it no longer count, so it opens a round.
        const round = roundRows[0]!.round + (input.decision === 'edit' ? 1 : 0);
        const { rows: inserted } = await client.query<{ id: string; thread_id: string }>(
          `INSERT INTO svc_gate_decisions (run_id, thread_id, gate, wait_seq, round, decision, decided_by, decided_by_name,
                                           role, reason, edits, response, route_to)
           SELECT id, thread_id, $2, $3, $12, $4, $5, $6, $7, $8, $9::jsonb, $10, $11 FROM svc_runs WHERE id = $1
           ON CONFLICT (run_id, wait_seq, round, decided_by)
             WHERE decided_by IS NOT NULL AND decision IN ('approve', 'edit')
           DO NOTHING
           RETURNING id, thread_id`,
          [
            input.runId,
            input.gate,
            input.waitSeq,
            input.decision,
            input.decidedBy.id,
            input.decidedBy.name,
            input.role,
            storable(input.reason),
            input.edits ? storableJson(input.edits) : null,
            storable(input.response),
            input.routeTo,
            round,
          ],
        );
        if (!inserted[0]) return { outcome: 'duplicate' };
        const { rows: approvalRows } = await client.query<ApprovalRow>(APPROVALS_OF_STOP, [input.runId, input.waitSeq]);
        const approvals = approvalsFrom(approvalRows, input.approvalsNeeded);
        const approving = input.decision === 'approve' || input.decision === 'edit';
        if (approving && approvals.given < approvals.needed) {
          // The approvers still to come see the edited text (the run's pending gate, the inbox).
          if (input.edits) {
            await client.query(
              `UPDATE svc_runs SET pending_gate = jsonb_set(pending_gate, '{context}',
                                                            (pending_gate->'context') || $2::jsonb)
                WHERE id = $1`,
              [input.runId, storableJson(input.edits)],
            );
          }
          return { outcome: 'waiting', approvals };
        }
        let resume: GateResume;
        if (approving) {
          const { rows: editRows } = await client.query<{ edits: Record<string, string> }>(EDITS_OF_STOP, [
            input.runId,
            input.waitSeq,
          ]);
          // A later edit's text over an earlier one's for the same phase.
          const edits = Object.assign({}, ...editRows.map((r) => r.edits)) as Record<string, string>;
          const edited = Object.keys(edits).length > 0;
          resume = {
            kind: edited ? 'edit' : 'approve',
            approved: true,
            reason: input.reason,
            ...(edited ? { edits } : {}),
            by: approvals.by.map((a) => a.name),
          };
        } else if (input.decision === 'respond') {
          resume = {
            kind: 'respond',
            approved: null,
            reason: input.reason,
            response: input.response ?? '',
            to: input.routeTo,
            by: [input.decidedBy.name],
          };
        } else {
          resume = { kind: 'reject', approved: false, reason: input.reason, by: [input.decidedBy.name] };
        }
        await client.query(CLAIM, [input.runId, lease.owner, lease.leaseS, storableJson(resume), seqReserved]);
        return { outcome: 'resumed', approvals, resume, decisionId: inserted[0].id };
      });
    },

    /**
     * Undoes a claim whose resume could not start: the gate waits again at the same stop, and the decision that
     * claimed it is taken back (the only deletion of a record besides its thread's), so it can be made again.
     */
    async unclaim(runId: string, gate: PendingGate, decisionId: string): Promise<void> {
      await pool.query(
        `WITH waiting AS (
           UPDATE svc_runs SET status = 'waiting_approval', pending_gate = $2, owner_id = NULL, lease_until = NULL,
                  resume_decision = NULL
            WHERE id = $1 AND status = 'running'
         )
         DELETE FROM svc_gate_decisions WHERE id = $3`,
        [runId, storableJson(gate), decisionId],
      );
    },

    /**
     * Claims one waiting gate whose deadline has passed, records its expiry and leases the run to this process:
     * the row lock (SKIP LOCKED) and the status check make exactly one process in the cluster act on it.
     */
    async claimExpired(lease: Lease, seqBlock: number): Promise<ExpiredGate | undefined> {
      return withTransaction(pool, async (client) => {
        const { rows } = await client.query<{
          id: string;
          thread_id: string;
          agent: string;
          model: string | null;
          project_id: string | null;
          pending_gate: PendingGate;
          event_seq: number;
          seq_reserved: number;
        }>(
          `SELECT r.id, r.thread_id, r.agent, r.model, t.project_id, r.pending_gate, r.event_seq, r.seq_reserved
             FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id
            WHERE r.status = 'waiting_approval' AND r.gate_expires_at <= now()
            ORDER BY r.gate_expires_at LIMIT 1
            FOR UPDATE OF r SKIP LOCKED`,
        );
        const run = rows[0];
        if (!run) return undefined;
        const expiry = run.pending_gate.on_expiry ?? { action: 'reject', target: null, after_s: 0 };
        const waited = expiry.after_s ? ` after ${formatDuration(expiry.after_s)}` : '';
        const reason = `nobody decided the gate${waited}`;
        const resume: GateResume = {
          kind: 'expire',
          outcome: expiry.action,
          approved: expiry.action === 'route' ? null : expiry.action === 'approve',
          reason,
          to: expiry.target,
          by: ['expiry'],
        };
        await client.query(
          `INSERT INTO svc_gate_decisions (run_id, thread_id, gate, wait_seq, decision, decided_by, decided_by_name,
                                           reason, outcome, route_to)
           VALUES ($1, $2, $3, $4, 'expire', NULL, 'expiry', $5, $6, $7)`,
          [run.id, run.thread_id, run.pending_gate.node, run.event_seq, reason, expiry.action, expiry.target],
        );
        await client.query(CLAIM, [
          run.id,
          lease.owner,
          lease.leaseS,
          storableJson(resume),
          Math.max(run.seq_reserved, run.event_seq) + seqBlock,
        ]);
        return {
          runId: run.id,
          threadId: run.thread_id,
          agent: run.agent,
          model: run.model,
          projectId: run.project_id,
          gate: run.pending_gate,
          eventSeq: run.event_seq,
          resume,
        };
      });
    },

    /** The latest decision taken at a gate of the thread: who acted, when, for the 409 of a decision come too late. */
    async latestAt(threadId: string, gate: string): Promise<LastDecision | undefined> {
      const { rows } = await pool.query<LastDecisionRow>(
        `${LAST_DECISION} WHERE thread_id = $1 AND gate = $2 ORDER BY id DESC LIMIT 1`,
        [threadId, gate],
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
    async approvalsOf(runId: string, waitSeq: number, needed: number): Promise<GateApprovals> {
      const { rows } = await pool.query<ApprovalRow>(APPROVALS_OF_STOP, [runId, waitSeq]);
      return approvalsFrom(rows, needed);
    },

    /**
     * Gates waiting in the given projects (every project when null), oldest first, with their approvals so far; a
     * thread from before projects existed belongs to the default project.
     */
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
                COALESCE((SELECT json_agg(json_build_object('id', d.decided_by, 'name', d.decided_by_name,
                                                            'at', d.decided_at) ORDER BY d.id)
                            FROM svc_gate_decisions d
                           WHERE d.run_id = r.id AND d.wait_seq = r.event_seq AND d.decision IN ('approve', 'edit')
                             AND d.round = (SELECT COALESCE(max(x.round), 0) FROM svc_gate_decisions x
                                             WHERE x.run_id = r.id AND x.wait_seq = r.event_seq)),
                         '[]'::json) AS approvals
           FROM svc_runs r
           JOIN svc_threads t ON t.id = r.thread_id
           JOIN svc_projects p ON p.id = COALESCE(t.project_id, $2::uuid)
          WHERE r.status = 'waiting_approval' AND r.pending_gate IS NOT NULL
            AND ($1::uuid[] IS NULL OR p.id = ANY($1::uuid[]))
          ORDER BY waiting_since, r.id
          LIMIT 500`,
        [projectIds, DEFAULT_PROJECT_ID],
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

/** 172800 → `2d`, 5400 → `90m`: an expiry's wait, as the asset would have written it. */
export function formatDuration(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}
