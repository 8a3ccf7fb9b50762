import type { Migration } from './migration';

/**
 * Mail as a door to stops (docs/approvals.md#mail): whom an organisation's or a project's stops are mailed to, and the
 * decision links the mails carry (only each token's hash is kept, bound to the stop's round and its person, used once).
 * The stops' outbox of 0007_slack takes mail too: a stop that starts waiting where someone is to be mailed queues one
 * delivery `via = 'email'`.
 */
export const email: Migration = {
  name: '0008_email',
  // New tables and a new form of the outbox function: the release before goes on as it did.
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_email_recipients (
         scope_type text NOT NULL CHECK (scope_type IN ('org', 'project')),
         scope_id uuid NOT NULL,
         recipients jsonb NOT NULL,
         updated_by text NOT NULL,
         updated_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (scope_type, scope_id)
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_email_links (
         token_sha256 text PRIMARY KEY,
         run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
         wait_seq bigint NOT NULL,
         round integer NOT NULL,
         -- null: an address that is nobody's here, mailed without a way to decide.
         user_id uuid REFERENCES svc_users(id) ON DELETE CASCADE,
         recipient text NOT NULL,
         expires_at timestamptz NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         sent_at timestamptz,
         used_at timestamptz
       )`,
    );
    await client.query(`CREATE INDEX IF NOT EXISTS svc_email_links_by_stop ON svc_email_links (run_id, wait_seq)`);
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_stop_deliveries_by_via ON svc_stop_deliveries (run_id, wait_seq, via)`,
    );
    // Slack's message follows the stop (posted when it starts waiting, updated after); a mail goes once, at its start.
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_stop_deliveries_enqueue(p_run uuid, p_seq bigint, p_new boolean)
       RETURNS void LANGUAGE plpgsql AS $fn$
       DECLARE
         org uuid;
         project uuid;
         queued boolean := false;
       BEGIN
         IF NOT EXISTS (SELECT 1 FROM svc_slack_connections)
            AND NOT (p_new AND EXISTS (SELECT 1 FROM svc_email_recipients)) THEN
           RETURN;
         END IF;
         SELECT t.org_id, th.project_id INTO org, project
           FROM svc_runs r JOIN svc_threads th ON th.id = r.thread_id JOIN svc_projects p ON p.id = th.project_id
           JOIN svc_teams t ON t.id = p.team_id
          WHERE r.id = p_run;
         IF org IS NULL THEN
           RETURN;
         END IF;
         -- A stop posted before its organisation connected Slack has no message to update.
         IF EXISTS (SELECT 1 FROM svc_slack_connections WHERE org_id = org)
            AND (p_new OR EXISTS (SELECT 1 FROM svc_stop_deliveries
                                   WHERE run_id = p_run AND wait_seq = p_seq AND via = 'slack')) THEN
           INSERT INTO svc_stop_deliveries (via, org_id, run_id, wait_seq) VALUES ('slack', org, p_run, p_seq);
           queued := true;
         END IF;
         IF p_new AND EXISTS (SELECT 1 FROM svc_email_recipients
                               WHERE (scope_type = 'project' AND scope_id = project)
                                  OR (scope_type = 'org' AND scope_id = org)) THEN
           INSERT INTO svc_stop_deliveries (via, org_id, run_id, wait_seq) VALUES ('email', org, p_run, p_seq);
           queued := true;
         END IF;
         IF queued THEN
           PERFORM pg_notify('svc_webhooks', '');
         END IF;
       END
       $fn$`,
    );
  },
};
