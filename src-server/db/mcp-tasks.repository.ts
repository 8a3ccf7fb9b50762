import type { McpTask, NewMcpTask } from '../storage/mcp-sessions';
import type { Pool } from './pool';

/** How many tasks one `tasks/list` page holds. */
export const MCP_TASKS_PAGE = 50;

/** The task's status from its run's (storage/mcp-sessions.ts McpTaskStatus). */
const TASK_COLUMNS = `t.id, t.user_id, t.run_id, t.error, t.tool, t.ttl_ms::float8 AS ttl_ms, t.poll_interval_ms,
  to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(GREATEST(t.created_at, COALESCE(r.finished_at, r.started_at, t.created_at)) AT TIME ZONE 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS last_updated_at,
  CASE WHEN t.error IS NOT NULL THEN 'failed' ELSE CASE r.status WHEN 'waiting_approval' THEN 'input_required'
                WHEN 'completed' THEN 'completed' WHEN 'rejected' THEN 'completed'
                WHEN 'error' THEN 'failed' WHEN 'cancelled' THEN 'cancelled'
                ELSE 'working' END END AS status,
  COALESCE(t.error, CASE WHEN r.status IN ('error', 'cancelled') THEN r.error_detail END) AS status_message`;

/** MCP tasks (docs/mcp.md#runs-as-tasks), each its person's only, until it expires. */
export function mcpTasksRepository(pool: Pool) {
  return {
    async create(task: NewMcpTask) {
      // Tasks past their time go as new ones come: the table holds what clients may still ask for.
      await pool.query('DELETE FROM svc_mcp_tasks WHERE expires_at < now()');
      await pool.query(
        `INSERT INTO svc_mcp_tasks (id, user_id, run_id, error, tool, ttl_ms, poll_interval_ms, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))`,
        [
          task.id,
          task.user_id,
          task.run_id,
          task.error,
          task.tool,
          task.ttl_ms,
          task.poll_interval_ms,
          task.ttl_ms / 1000,
        ],
      );
    },

    /** The task, if it is this person's and has not expired. */
    async get(id: string, userId: string): Promise<McpTask | undefined> {
      const { rows } = await pool.query<McpTask>(
        `SELECT ${TASK_COLUMNS} FROM svc_mcp_tasks t LEFT JOIN svc_runs r ON r.id = t.run_id
          WHERE t.id = $1 AND t.user_id = $2 AND t.expires_at >= now()`,
        [id, userId],
      );
      return rows[0];
    },

    /** This person's tasks, newest first, a page at a time after the task `after` names; `more` when others follow. */
    async list(userId: string, after: string | undefined): Promise<{ tasks: McpTask[]; more: boolean }> {
      const { rows } = await pool.query<McpTask>(
        `SELECT ${TASK_COLUMNS} FROM svc_mcp_tasks t LEFT JOIN svc_runs r ON r.id = t.run_id
          WHERE t.user_id = $1 AND t.expires_at >= now()
            AND ($2::text IS NULL OR (t.created_at, t.id) < (SELECT created_at, id FROM svc_mcp_tasks WHERE id = $2))
          ORDER BY t.created_at DESC, t.id DESC LIMIT $3`,
        [userId, after ?? null, MCP_TASKS_PAGE + 1],
      );
      return { tasks: rows.slice(0, MCP_TASKS_PAGE), more: rows.length > MCP_TASKS_PAGE };
    },
  };
}

export type McpTasksRepository = ReturnType<typeof mcpTasksRepository>;
