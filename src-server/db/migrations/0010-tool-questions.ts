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
         -- The process holding the call: a question is pending only while its run is still that process's.
         owner_id text NOT NULL,
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
    // Webhooks (docs/webhooks.md#events): `question.asked` as the question is written, `question.answered` as it is
    // answered, expires or is withdrawn; in the transaction of that change, as every other event.
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_webhook_tool_question() RETURNS trigger LANGUAGE plpgsql AS $fn$
       DECLARE
         info record;
         stop jsonb;
       BEGIN
         IF NOT EXISTS (SELECT 1 FROM svc_webhooks) THEN
           RETURN NULL;
         END IF;
         SELECT * INTO info FROM svc_webhook_run_data(NEW.run_id);
         stop := jsonb_build_object('kind', 'question', 'id', NEW.run_id::text || ':' || NEW.wait_seq::text,
                                    'round', 1, 'node', NEW.node, 'tool_call', 'null'::jsonb);
         info.data := info.data || jsonb_build_object('gate', NEW.node, 'tool', NEW.tool, 'server', NEW.server,
                                                    'mode', NEW.mode, 'stop', stop);
         IF TG_OP = 'INSERT' THEN
           PERFORM svc_webhook_enqueue('question.asked', info.project, info.data || jsonb_build_object(
             'question', NEW.message, 'expires_at', svc_webhook_time(NEW.expires_at)));
         ELSIF OLD.state = 'asked' AND NEW.state <> 'asked' THEN
           PERFORM svc_webhook_enqueue('question.answered', info.project, info.data || jsonb_build_object(
             'action', NEW.state,
             'answered_by', CASE WHEN NEW.answered_by IS NULL THEN 'null'::jsonb
                                 ELSE jsonb_build_object('id', NEW.answered_by,
                                        'name', (SELECT u.name FROM svc_users u WHERE u.id = NEW.answered_by)) END,
             'answered_at', svc_webhook_time(NEW.answered_at)));
         END IF;
         RETURN NULL;
       END
       $fn$`,
    );
    await client.query(`DROP TRIGGER IF EXISTS svc_webhook_tool_question ON svc_tool_questions`);
    await client.query(
      `CREATE TRIGGER svc_webhook_tool_question AFTER INSERT OR UPDATE OF state ON svc_tool_questions
       FOR EACH ROW EXECUTE FUNCTION svc_webhook_tool_question()`,
    );
  },
};
