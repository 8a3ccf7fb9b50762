import type { Migration } from './migration';

/**
 * Questions from tool servers (docs/approvals.md#questions-from-tool-servers): an MCP server the service calls asks a
 * person something mid-call; the question is a stop (`<run id>:<wait seq>`) whose row the process holding the call
 * waits on, and whose answer any process takes, once.
 */
export const toolQuestions: Migration = {
  name: '0010_tool_questions',
  // A new table: the release before goes on as it did (its client declares no elicitation, so it is never asked).
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_tool_questions (
         run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
         wait_seq bigint NOT NULL,
         node text NOT NULL,
         call_id text NOT NULL,
         tool text NOT NULL,
         server text NOT NULL,
         mode text NOT NULL CHECK (mode IN ('form', 'url')),
         message text NOT NULL,
         requested_schema jsonb,
         url text,
         state text NOT NULL DEFAULT 'asked'
           CHECK (state IN ('asked', 'accept', 'decline', 'cancel', 'expired', 'withdrawn')),
         content jsonb,
         answered_by uuid REFERENCES svc_users(id) ON DELETE SET NULL,
         asked_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz NOT NULL,
         answered_at timestamptz,
         PRIMARY KEY (run_id, wait_seq)
       )`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_tool_questions_asked ON svc_tool_questions (asked_at) WHERE state = 'asked'`,
    );
  },
};
