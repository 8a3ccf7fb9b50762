import type { QuestionAction, ToolQuestionState } from '../contracts/tool-questions';
import type { NewToolQuestion, ToolQuestionStore } from '../storage/types';
import type { Pool } from './pool';

/** A question still asked, as the inbox lists it, with its run and project. */
export interface WaitingQuestion {
  run_id: string;
  wait_seq: number;
  thread_id: string;
  agent: string;
  message: string | null;
  project_id: string;
  project_name: string;
  node: string;
  call_id: string;
  tool: string;
  server: string;
  mode: 'form' | 'url';
  question: string;
  requested_schema: Record<string, unknown> | null;
  url: string | null;
  asked_at: string;
  expires_at: string;
}

/** A question as an answer finds it: where it stands, and the project whose members may answer it. */
export interface QuestionRow {
  run_id: string;
  wait_seq: number;
  thread_id: string;
  project_id: string;
  mode: 'form' | 'url';
  requested_schema: Record<string, unknown> | null;
  state: ToolQuestionState;
  expired: boolean;
  /** The process that held the call no longer holds the run: the call is gone, whatever the row says. */
  orphaned: boolean;
}

/** A question as Slack's message and a mail show it: what it asks, and where it stands. */
export interface ShownQuestion {
  thread_id: string;
  project_id: string;
  project_name: string;
  agent: string;
  tool: string;
  server: string;
  mode: 'form' | 'url';
  message: string;
  requested_schema: Record<string, unknown> | null;
  url: string | null;
  /** Still waiting for a person: asked, in time, and its call still held. */
  waiting: boolean;
  state: ToolQuestionState;
  answered_by: string | null;
  expires_at: string;
}

const iso = (at: Date) => at.toISOString();

/** Questions from tool servers (docs/approvals.md#questions-from-tool-servers), shared by every process. */
export function toolQuestionsRepository(pool: Pool): ToolQuestionStore & {
  /** Questions waiting for a person, of these projects (null: all), or of one run. */
  waiting(projectIds: string[] | null, runId?: string): Promise<WaitingQuestion[]>;
  find(runId: string, waitSeq: number): Promise<QuestionRow | undefined>;
  shown(runId: string, waitSeq: number): Promise<ShownQuestion | undefined>;
  take(
    runId: string,
    waitSeq: number,
    answer: { action: QuestionAction; content: Record<string, unknown> | null; by: string },
  ): Promise<boolean>;
} {
  return {
    async ask(q: NewToolQuestion) {
      await pool.query(
        `INSERT INTO svc_tool_questions (run_id, wait_seq, node, call_id, tool, server, mode, message, requested_schema,
                                         url, expires_at, owner_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11), $12)
         ON CONFLICT (run_id, wait_seq) DO NOTHING`,
        [
          q.runId,
          q.waitSeq,
          q.node,
          q.callId,
          q.tool,
          q.server,
          q.mode,
          q.message,
          q.requestedSchema,
          q.url,
          q.expiresInS,
          q.owner,
        ],
      );
    },

    async answer(runId, waitSeq) {
      const { rows } = await pool.query<{
        state: ToolQuestionState;
        content: Record<string, unknown> | null;
        by: string | null;
      }>(
        `SELECT q.state, q.content, u.name AS by
           FROM svc_tool_questions q LEFT JOIN svc_users u ON u.id = q.answered_by
          WHERE q.run_id = $1 AND q.wait_seq = $2`,
        [runId, waitSeq],
      );
      const row = rows[0];
      if (!row || (row.state !== 'accept' && row.state !== 'decline' && row.state !== 'cancel')) return null;
      return { action: row.state, content: row.content, by: row.by };
    },

    async close(runId, waitSeq, state) {
      const { rowCount } = await pool.query(
        `UPDATE svc_tool_questions SET state = $3, answered_at = now()
          WHERE run_id = $1 AND wait_seq = $2 AND state = 'asked'`,
        [runId, waitSeq, state],
      );
      return (rowCount ?? 0) > 0;
    },

    async withdrawAll(runId) {
      const { rowCount } = await pool.query(
        `UPDATE svc_tool_questions SET state = 'withdrawn', answered_at = now() WHERE run_id = $1 AND state = 'asked'`,
        [runId],
      );
      return rowCount ?? 0;
    },

    async waiting(projectIds, runId) {
      const { rows } = await pool.query<
        Omit<WaitingQuestion, 'asked_at' | 'expires_at' | 'wait_seq'> & {
          wait_seq: string;
          asked_at: Date;
          expires_at: Date;
        }
      >(
        `SELECT q.run_id, q.wait_seq, r.thread_id, r.agent, r.message, p.id AS project_id, p.name AS project_name,
                q.node, q.call_id, q.tool, q.server, q.mode, q.message AS question, q.requested_schema, q.url,
                q.asked_at, q.expires_at
           FROM svc_tool_questions q
           JOIN svc_runs r ON r.id = q.run_id
           JOIN svc_threads t ON t.id = r.thread_id
           JOIN svc_projects p ON p.id = t.project_id
          WHERE q.state = 'asked' AND q.expires_at > now() AND r.status = 'running' AND r.owner_id = q.owner_id
            AND ($1::uuid[] IS NULL OR p.id = ANY($1::uuid[])) AND ($2::uuid IS NULL OR q.run_id = $2)
          ORDER BY q.asked_at, q.run_id
          LIMIT 500`,
        [projectIds, runId ?? null],
      );
      return rows.map((row) => ({
        ...row,
        wait_seq: Number(row.wait_seq),
        asked_at: iso(row.asked_at),
        expires_at: iso(row.expires_at),
      }));
    },

    async shown(runId, waitSeq) {
      const { rows } = await pool.query<Omit<ShownQuestion, 'expires_at'> & { expires_at: Date }>(
        `SELECT r.thread_id, p.id AS project_id, p.name AS project_name, r.agent, q.tool, q.server, q.mode, q.message,
                q.requested_schema, q.url, q.state, u.name AS answered_by, q.expires_at,
                (q.state = 'asked' AND q.expires_at > now() AND r.status = 'running' AND r.owner_id = q.owner_id)
                  AS waiting
           FROM svc_tool_questions q
           JOIN svc_runs r ON r.id = q.run_id
           JOIN svc_threads t ON t.id = r.thread_id
           JOIN svc_projects p ON p.id = t.project_id
           LEFT JOIN svc_users u ON u.id = q.answered_by
          WHERE q.run_id = $1 AND q.wait_seq = $2`,
        [runId, waitSeq],
      );
      return rows[0] && { ...rows[0], expires_at: iso(rows[0].expires_at) };
    },

    async find(runId, waitSeq) {
      const { rows } = await pool.query<Omit<QuestionRow, 'wait_seq'> & { wait_seq: string }>(
        `SELECT q.run_id, q.wait_seq, r.thread_id, t.project_id, q.mode, q.requested_schema, q.state,
                q.expires_at <= now() AS expired, r.owner_id IS DISTINCT FROM q.owner_id AS orphaned
           FROM svc_tool_questions q
           JOIN svc_runs r ON r.id = q.run_id
           JOIN svc_threads t ON t.id = r.thread_id
          WHERE q.run_id = $1 AND q.wait_seq = $2`,
        [runId, waitSeq],
      );
      return rows[0] && { ...rows[0], wait_seq: Number(rows[0].wait_seq) };
    },

    async take(runId, waitSeq, answer) {
      const { rowCount } = await pool.query(
        `UPDATE svc_tool_questions q SET state = $3, content = $4, answered_by = $5, answered_at = now()
          WHERE q.run_id = $1 AND q.wait_seq = $2 AND q.state = 'asked' AND q.expires_at > now()
            AND EXISTS (SELECT 1 FROM svc_runs r WHERE r.id = q.run_id AND r.owner_id = q.owner_id)`,
        [runId, waitSeq, answer.action, answer.content, answer.by],
      );
      return (rowCount ?? 0) > 0;
    },
  };
}

export type ToolQuestionsRepository = ReturnType<typeof toolQuestionsRepository>;
