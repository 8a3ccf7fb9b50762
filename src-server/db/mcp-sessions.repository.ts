import type { ElicitationState, McpElicitation, McpSession } from '../storage/mcp-sessions';
import type { Pool } from './pool';

/** Sessions left unused this long are gone: a client that comes back begins a new one (the protocol's 404). */
export const MCP_SESSION_IDLE_S = 7 * 24 * 3600;

/** The MCP server's sessions and the questions asked in them, shared by every process. */
export function mcpSessionsRepository(pool: Pool) {
  return {
    async create(session: McpSession): Promise<void> {
      // Sessions nobody used for a week go as new ones come: the table holds what clients may still use.
      await pool.query(`DELETE FROM svc_mcp_sessions WHERE last_used_at < now() - make_interval(secs => $1)`, [
        MCP_SESSION_IDLE_S,
      ]);
      await pool.query(
        `INSERT INTO svc_mcp_sessions (id, user_id, protocol_version, client_name, client_version, elicitation)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [
          session.id,
          session.user_id,
          session.protocol_version,
          session.client_name,
          session.client_version,
          session.elicitation,
        ],
      );
    },

    /** The session, if it is this person's and still alive; marks it used. */
    async use(id: string, userId: string): Promise<McpSession | undefined> {
      const { rows } = await pool.query<McpSession>(
        `UPDATE svc_mcp_sessions SET last_used_at = now()
          WHERE id = $1 AND user_id = $2 AND last_used_at >= now() - make_interval(secs => $3)
          RETURNING id, user_id, protocol_version, client_name, client_version, elicitation`,
        [id, userId, MCP_SESSION_IDLE_S],
      );
      return rows[0];
    },

    /** Ends the session (DELETE /mcp): true when it was this person's. */
    async end(id: string, userId: string): Promise<boolean> {
      const { rowCount } = await pool.query('DELETE FROM svc_mcp_sessions WHERE id = $1 AND user_id = $2', [
        id,
        userId,
      ]);
      return (rowCount ?? 0) > 0;
    },

    async ask(question: Omit<McpElicitation, 'state' | 'outcome'>, timeoutS: number): Promise<void> {
      await pool.query(
        `INSERT INTO svc_mcp_elicitations (id, session_id, run_id, thread_id, gate, call_id, context_node, expires_at,
                                           stop_id, round)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8), $9, $10)`,
        [
          question.id,
          question.session_id,
          question.run_id,
          question.thread_id,
          question.gate,
          question.call_id,
          question.context_node,
          timeoutS,
          question.stop_id,
          question.round,
        ],
      );
    },

    /**
     * Takes the answer to a question of this session that is still asked and in time: exactly one answer is taken,
     * on whichever process it reaches. Undefined for anything else (unknown, answered, expired).
     */
    async take(id: string, sessionId: string): Promise<McpElicitation | undefined> {
      const { rows } = await pool.query<McpElicitation>(
        `UPDATE svc_mcp_elicitations SET state = 'answering', answered_at = now()
          WHERE id = $1 AND session_id = $2 AND state = 'asked' AND expires_at > now()
          RETURNING id, session_id, run_id, thread_id, gate, call_id, context_node, stop_id, round, state, outcome`,
        [id, sessionId],
      );
      return rows[0];
    },

    async settle(id: string, state: Exclude<ElicitationState, 'asked' | 'answering'>, outcome: string | null) {
      await pool.query(`UPDATE svc_mcp_elicitations SET state = $2, outcome = $3 WHERE id = $1`, [id, state, outcome]);
    },

    /** Gives up on a question nobody answered: true when it was still asked (an answer may have just come). */
    async expire(id: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_mcp_elicitations SET state = 'expired' WHERE id = $1 AND state = 'asked'`,
        [id],
      );
      return (rowCount ?? 0) > 0;
    },

    async state(id: string): Promise<Pick<McpElicitation, 'state' | 'outcome'> | undefined> {
      const { rows } = await pool.query<Pick<McpElicitation, 'state' | 'outcome'>>(
        'SELECT state, outcome FROM svc_mcp_elicitations WHERE id = $1',
        [id],
      );
      return rows[0];
    },
  };
}

export type McpSessionsRepository = ReturnType<typeof mcpSessionsRepository>;
