import type { Migration } from './migration';

/**
 * Slack as a door to stops (docs/approvals.md#slack): an organisation's workspace (its token and signing secret sealed
 * by the secret store, whose key is never here), the channel of each project, the people linked to Slack identities,
 * the message of each stop, the interactions already seen (replays), and an outbox of what is to be posted or updated.
 * The outbox is written by triggers in the transaction of the change it reports, as the webhooks' is: a stop that
 * starts waiting, a decision, an expiry, a run that leaves its stop (cancelled); a decision made anywhere therefore
 * updates the message, and Slack being away delays only the message.
 */
export const slack: Migration = {
  name: '0007_slack',
  // New tables, a nullable column and new triggers: the release before goes on as it did (its decisions say no `via`).
  compatible: true,
  async up(client) {
    await client.query(`ALTER TABLE svc_gate_decisions ADD COLUMN IF NOT EXISTS via text`);
    // Whether the identity provider said the user's email is verified: only then may a Slack identity with that email
    // be linked to her without her doing it.
    await client.query(`ALTER TABLE svc_users ADD COLUMN IF NOT EXISTS email_verified boolean NOT NULL DEFAULT false`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_slack_connections (
         org_id uuid PRIMARY KEY REFERENCES svc_orgs(id) ON DELETE CASCADE,
         team_id text NOT NULL,
         team_name text,
         app_id text,
         bot_user_id text,
         bot_token_sealed text NOT NULL,
         signing_secret_sealed text NOT NULL,
         channel text NOT NULL,
         connected_by text NOT NULL,
         connected_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await client.query(`CREATE INDEX IF NOT EXISTS svc_slack_connections_by_team ON svc_slack_connections (team_id)`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_slack_project_channels (
         project_id uuid PRIMARY KEY REFERENCES svc_projects(id) ON DELETE CASCADE,
         channel text NOT NULL
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_slack_links (
         team_id text NOT NULL,
         slack_user_id text NOT NULL,
         user_id uuid NOT NULL REFERENCES svc_users(id) ON DELETE CASCADE,
         linked_by_self boolean NOT NULL,
         linked_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (team_id, slack_user_id)
       )`,
    );
    await client.query(`CREATE INDEX IF NOT EXISTS svc_slack_links_by_user ON svc_slack_links (user_id)`);
    // A stop's message: what it shows of the stop, and once posted (ts set), where it is, to update it.
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_slack_messages (
         run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
         wait_seq bigint NOT NULL,
         channel text NOT NULL,
         -- The channel as it was configured (#approvals), for people; \`channel\` is Slack's id once posted.
         shown_as text NOT NULL,
         ts text,
         -- What the message shows of the stop while it waits (question, text, call), kept for the updates after it.
         facts jsonb,
         posted_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (run_id, wait_seq)
       )`,
    );
    // The signatures of interactions taken within Slack's five-minute window: the same one again is a replay.
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_slack_seen (
         signature text PRIMARY KEY,
         seen_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_stop_deliveries (
         id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
         via text NOT NULL,
         org_id uuid NOT NULL REFERENCES svc_orgs(id) ON DELETE CASCADE,
         run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
         wait_seq bigint NOT NULL,
         status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
         attempts integer NOT NULL DEFAULT 0,
         next_attempt_at timestamptz NOT NULL DEFAULT now(),
         claimed_by text,
         lease_until timestamptz,
         last_error text,
         last_attempt_at timestamptz,
         created_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_stop_deliveries_due ON svc_stop_deliveries (next_attempt_at)
         WHERE status = 'pending'`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_stop_deliveries_by_stop ON svc_stop_deliveries (run_id, wait_seq, created_at)`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_stop_deliveries_by_org ON svc_stop_deliveries (org_id, created_at DESC)`,
    );
    // Queues a message's post or update for the stop, where its organisation has Slack (or a message exists): most
    // installations have none, and the first check leaves at once.
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_stop_deliveries_enqueue(p_run uuid, p_seq bigint, p_new boolean)
       RETURNS void LANGUAGE plpgsql AS $fn$
       DECLARE
         org uuid;
       BEGIN
         IF NOT EXISTS (SELECT 1 FROM svc_slack_connections) THEN
           RETURN;
         END IF;
         SELECT c.org_id INTO org
           FROM svc_runs r JOIN svc_threads th ON th.id = r.thread_id JOIN svc_projects p ON p.id = th.project_id
           JOIN svc_teams t ON t.id = p.team_id JOIN svc_slack_connections c ON c.org_id = t.org_id
          WHERE r.id = p_run;
         IF org IS NULL THEN
           RETURN;
         END IF;
         -- A stop posted before its organisation connected Slack has no message to update.
         IF NOT p_new AND NOT EXISTS (SELECT 1 FROM svc_stop_deliveries WHERE run_id = p_run AND wait_seq = p_seq) THEN
           RETURN;
         END IF;
         INSERT INTO svc_stop_deliveries (via, org_id, run_id, wait_seq) VALUES ('slack', org, p_run, p_seq);
         PERFORM pg_notify('svc_webhooks', '');
       END
       $fn$`,
    );
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_stop_deliveries_run() RETURNS trigger LANGUAGE plpgsql AS $fn$
       BEGIN
         IF NEW.status = 'waiting_approval' AND (OLD.status IS DISTINCT FROM 'waiting_approval'
                                                 OR OLD.event_seq IS DISTINCT FROM NEW.event_seq) THEN
           PERFORM svc_stop_deliveries_enqueue(NEW.id, NEW.event_seq, true);
         END IF;
         IF OLD.status = 'waiting_approval' AND (NEW.status IS DISTINCT FROM 'waiting_approval'
                                                 OR OLD.event_seq IS DISTINCT FROM NEW.event_seq) THEN
           PERFORM svc_stop_deliveries_enqueue(NEW.id, OLD.event_seq, false);
         END IF;
         RETURN NULL;
       END
       $fn$`,
    );
    await client.query(
      `CREATE OR REPLACE TRIGGER svc_runs_stop_deliveries AFTER UPDATE OF status ON svc_runs
         FOR EACH ROW WHEN (OLD.status = 'waiting_approval' OR NEW.status = 'waiting_approval')
         EXECUTE FUNCTION svc_stop_deliveries_run()`,
    );
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_stop_deliveries_decision() RETURNS trigger LANGUAGE plpgsql AS $fn$
       BEGIN
         PERFORM svc_stop_deliveries_enqueue(NEW.run_id, NEW.wait_seq, false);
         RETURN NULL;
       END
       $fn$`,
    );
    await client.query(
      `CREATE OR REPLACE TRIGGER svc_gate_decisions_stop_deliveries AFTER INSERT ON svc_gate_decisions
         FOR EACH ROW EXECUTE FUNCTION svc_stop_deliveries_decision()`,
    );
  },
};
