import type { Migration } from './migration';

/**
 * MCP tasks (docs/mcp.md#runs-as-tasks): a `run_agent` call made as a task is a row naming its run and its person. Its
 * status is read from the run at each request, so any process answers it, across sessions and restarts, and a
 * decision taken anywhere moves it on.
 */
export const mcpTasks: Migration = {
  name: '0009_mcp_tasks',
  // A new table: the release before goes on as it did.
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_mcp_tasks (
         id text PRIMARY KEY,
         user_id uuid NOT NULL REFERENCES svc_users(id) ON DELETE CASCADE,
         -- null when the call was refused before a run began: \`error\` says why, and the task has failed.
         run_id uuid REFERENCES svc_runs(id) ON DELETE CASCADE,
         error text,
         tool text NOT NULL,
         ttl_ms bigint NOT NULL,
         poll_interval_ms integer NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz NOT NULL
          CHECK ((run_id IS NULL) <> (error IS NULL))
       )`,
    );
    await client.query(`CREATE INDEX IF NOT EXISTS svc_mcp_tasks_by_user ON svc_mcp_tasks (user_id, created_at DESC)`);
  },
};
