import type { ComparedDecision, ComparedRun } from '../contracts/comparisons';
import { GATE_DECISION_EVENTS, type GateDecisionEvent } from '../contracts/events';
import type { ComparedRecord } from '../storage/types';
import type { Pool } from './pool';

/**
 * The record of a run that a comparison compares (docs/compare.md), and the sides of a comparison as the API shows
 * them: tool calls, and gates' decisions from the runs' events.
 */
export function comparedRunsRepository(pool: Pool) {
  const decisionEvents = async (runId: string) => {
    const { rows } = await pool.query<{ data: string }>(
      `SELECT data FROM svc_run_events WHERE run_id = $1 AND type = ANY ($2) ORDER BY seq`,
      [runId, GATE_DECISION_EVENTS],
    );
    return rows.map((e) => JSON.parse(e.data) as GateDecisionEvent);
  };
  return {
    /**
     * What a comparison answers from (storage/types.ts ComparedRecordStore): the run's tool calls' answers and its
     * decisions. A call a comparison did not run gave no answer of the tool's: it is left out.
     */
    async recordOf(runId: string): Promise<ComparedRecord> {
      const [calls, decisions] = await Promise.all([
        pool.query<{ tool: string; arguments_sha256: string; result: string; is_error: boolean | null }>(
          `SELECT tool, arguments_sha256, result, is_error FROM svc_tool_calls
            WHERE run_id = $1 AND result IS NOT NULL AND replay IS DISTINCT FROM 'not_run'
            ORDER BY created_at, id`,
          [runId],
        ),
        decisionEvents(runId),
      ]);
      return {
        calls: calls.rows.map((c) => ({
          tool: c.tool,
          argumentsSha256: c.arguments_sha256,
          result: { text: c.result, isError: c.is_error ?? false },
        })),
        decisions,
      };
    },

    /** A dataset item's copy of the record of the run it was made from, for an experiment's run of it. */
    async itemRecordOf(itemId: string): Promise<ComparedRecord> {
      const { rows } = await pool.query<{ record: ComparedRecord }>(
        `SELECT record FROM svc_dataset_items WHERE id = $1`,
        [itemId],
      );
      // An item deleted while an experiment ran it answers as one typed by hand does: from nothing recorded.
      return rows[0]?.record ?? { calls: [], decisions: [] };
    },

    /** A run's tool calls as a side of a comparison shows them, in the order they were made. */
    async toolCallsOf(runId: string): Promise<ComparedRun['tool_calls']> {
      const { rows } = await pool.query<ComparedRun['tool_calls'][number]>(
        `SELECT node, tool, arguments_sha256, policy, replay, is_error, result FROM svc_tool_calls
          WHERE run_id = $1 ORDER BY created_at, id`,
        [runId],
      );
      return rows.map((row) => ({ ...row, is_error: row.result === null ? null : (row.is_error ?? false) }));
    },

    /** The decisions taken at a run's gates, from its events, oldest first. */
    async decisionsOf(runId: string): Promise<ComparedDecision[]> {
      return (await decisionEvents(runId)).map((event) => ({
        gate: event.node,
        kind: DECISION_KINDS[event.type],
        reason: 'reason' in event ? event.reason : null,
        deciders: 'deciders' in event ? (event.deciders ?? []) : ['expiry'],
        in_original: ('in_original' in event && event.in_original) || null,
      }));
    },
  };
}

const DECISION_KINDS = {
  gate_approved: 'approve',
  gate_edited: 'edit',
  gate_responded: 'respond',
  gate_rejected: 'reject',
  gate_expired: 'expire',
} as const;

export type ComparedRunsRepository = ReturnType<typeof comparedRunsRepository>;
