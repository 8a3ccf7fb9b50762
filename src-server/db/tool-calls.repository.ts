import type { GateDecision } from '../contracts/runs';
import { ROLES, type Role } from '../contracts/tenancy';
import type { ModelTurnRecord, NewToolCall, ToolCallRecord, ToolCallStore } from '../storage/types';
import type { Pool } from './pool';
import { storable, storableJson } from './text';
import { BUILT_IN_ISSUER } from './users.repository';

interface ToolCallRow {
  id: string;
  run_id: string;
  node: string;
  tool: string;
  arguments: string;
  arguments_sha256: string;
  policy: ToolCallRecord['policy'];
  replay: ToolCallRecord['replay'];
  rerunnable: boolean;
  decision: GateDecision | null;
  attempts: number;
  result: string | null;
  is_error: boolean | null;
}

const toRecord = (row: ToolCallRow): ToolCallRecord => ({
  id: row.id,
  runId: row.run_id,
  node: row.node,
  tool: row.tool,
  arguments: row.arguments,
  argumentsSha256: row.arguments_sha256,
  policy: row.policy,
  replay: row.replay ?? null,
  rerunnable: row.rerunnable,
  decision: row.decision,
  attempts: row.attempts,
  result: row.result === null ? null : { text: row.result, isError: row.is_error ?? false },
});

/**
 * The record of a phase's model turns and tool calls (engine/tools): every column is written once, the first write
 * winning, so a write repeated after a failure, or by a process that took the run over, changes nothing.
 */
export function toolCallsRepository(pool: Pool): ToolCallStore {
  return {
    async turn(id: string): Promise<ModelTurnRecord | undefined> {
      const { rows } = await pool.query<{ text: string; tool_calls: ModelTurnRecord['toolCalls'] }>(
        'SELECT text, tool_calls FROM svc_model_turns WHERE id = $1',
        [id],
      );
      return rows[0] ? { text: rows[0].text, toolCalls: rows[0].tool_calls } : undefined;
    },

    async saveTurn(id: string, runId: string, turn: ModelTurnRecord): Promise<void> {
      await pool.query(
        `INSERT INTO svc_model_turns (id, run_id, text, tool_calls) VALUES ($1, $2, $3, $4::jsonb)
         ON CONFLICT (id) DO NOTHING`,
        [id, runId, storable(turn.text), storableJson(turn.toolCalls)],
      );
    },

    async propose(call: NewToolCall): Promise<{ record: ToolCallRecord; created: boolean }> {
      const { rows } = await pool.query<ToolCallRow & { created: boolean }>(
        `WITH added AS (
           INSERT INTO svc_tool_calls (id, run_id, node, tool, arguments, arguments_sha256, policy, rerunnable, replay)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (id) DO NOTHING
           RETURNING *)
         SELECT *, true AS created FROM added
         UNION ALL
         SELECT *, false AS created FROM svc_tool_calls WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM added)`,
        [
          call.id,
          call.runId,
          call.node,
          call.tool,
          storable(call.arguments),
          call.argumentsSha256,
          call.policy,
          call.rerunnable,
          call.replay,
        ],
      );
      return { record: toRecord(rows[0]!), created: rows[0]!.created };
    },

    async decide(id: string, decision: GateDecision): Promise<void> {
      await pool.query(
        `UPDATE svc_tool_calls SET decision = $2::jsonb
          WHERE id = $1
            AND (decision IS NULL
              OR COALESCE(($2::jsonb ->> 'rerun_after')::int, 0) > COALESCE((decision ->> 'rerun_after')::int, 0))`,
        [id, storableJson(decision)],
      );
    },

    async start(id: string, attempts: number): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_tool_calls SET attempts = attempts + 1, started_at = now()
          WHERE id = $1 AND attempts = $2 AND result IS NULL`,
        [id, attempts],
      );
      return (rowCount ?? 0) > 0;
    },

    async finish(id: string, result: { text: string; isError: boolean }): Promise<void> {
      await pool.query(
        `UPDATE svc_tool_calls SET result = $2, is_error = $3, finished_at = now() WHERE id = $1 AND result IS NULL`,
        [id, storable(result.text), result.isError],
      );
    },

    async granted(threadId: string, tool: string, role: Role): Promise<boolean> {
      // The granter's roles on the thread's project, its team and its organisation, as they are now; a built-in
      // administrator (the API token, the anonymous user) is admin everywhere. A deleted granter grants nothing.
      const { rowCount } = await pool.query(
        `SELECT 1
           FROM svc_tool_grants g
           JOIN svc_threads th ON th.id = g.thread_id
           JOIN svc_projects p ON p.id = th.project_id
           JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_users u ON u.id::text = g.granted_by
          WHERE g.thread_id = $1 AND g.tool = $2 AND g.revoked_at IS NULL
            AND (u.issuer = $4 OR EXISTS (
                  SELECT 1 FROM svc_memberships m
                   WHERE m.user_id = u.id
                     AND ((m.scope_type = 'project' AND m.scope_id = p.id)
                       OR (m.scope_type = 'team' AND m.scope_id = t.id)
                       OR (m.scope_type = 'org' AND m.scope_id = t.org_id))
                     AND array_position($5::text[], m.role) <= array_position($5::text[], $3)))`,
        [threadId, tool, role, BUILT_IN_ISSUER, ROLES],
      );
      return (rowCount ?? 0) > 0;
    },
  };
}
