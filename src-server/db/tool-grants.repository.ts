import type { ToolGrant } from '../contracts/runs';
import type { Pool } from './pool';

interface GrantRow {
  id: string;
  thread_id: string;
  tool: string;
  call_id: string;
  granted_by: string | null;
  granted_by_name: string;
  granted_at: Date;
  revoked_by_name: string | null;
  revoked_at: Date | null;
}

const toGrant = (row: GrantRow): ToolGrant => ({
  id: String(row.id),
  thread_id: row.thread_id,
  tool: row.tool,
  call_id: row.call_id,
  granted_by: { id: row.granted_by, name: row.granted_by_name },
  granted_at: row.granted_at.toISOString(),
  revoked_by: row.revoked_by_name,
  revoked_at: row.revoked_at?.toISOString() ?? null,
});

/** Tools a person allowed for the rest of a thread (docs/tools.md#deciding-a-call): recorded, revocable, kept. */
export function toolGrantsRepository(pool: Pool) {
  return {
    /** Records a grant; one already active for the thread's tool stays as it is (and is answered). */
    async grant(threadId: string, tool: string, callId: string, by: { id: string; name: string }): Promise<ToolGrant> {
      const { rows } = await pool.query<GrantRow>(
        `WITH added AS (
           INSERT INTO svc_tool_grants (thread_id, tool, call_id, granted_by, granted_by_name)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (thread_id, tool) WHERE revoked_at IS NULL DO NOTHING
           RETURNING *)
         SELECT * FROM added
         UNION ALL
         SELECT * FROM svc_tool_grants
          WHERE thread_id = $1 AND tool = $2 AND revoked_at IS NULL AND NOT EXISTS (SELECT 1 FROM added)`,
        [threadId, tool, callId, by.id, by.name],
      );
      return toGrant(rows[0]!);
    },

    async list(threadId: string): Promise<ToolGrant[]> {
      const { rows } = await pool.query<GrantRow>('SELECT * FROM svc_tool_grants WHERE thread_id = $1 ORDER BY id', [
        threadId,
      ]);
      return rows.map(toGrant);
    },

    /** Revokes an active grant of the thread; undefined when there is none of that id. */
    async revoke(threadId: string, grantId: string, byName: string): Promise<ToolGrant | undefined> {
      const { rows } = await pool.query<GrantRow>(
        `UPDATE svc_tool_grants SET revoked_at = now(), revoked_by_name = $3
          WHERE thread_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING *`,
        [threadId, grantId, byName],
      );
      return rows[0] && toGrant(rows[0]);
    },
  };
}

export type ToolGrantsRepository = ReturnType<typeof toolGrantsRepository>;
