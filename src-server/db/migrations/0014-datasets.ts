import type { Migration } from './migration';

/**
 * Datasets and experiments (docs/compare.md#datasets-and-experiments). A dataset's items are copies: the input, the
 * expected output, checks, and the record of the run an item was made from (its tool calls' answers and gates'
 * decisions), kept until someone deletes them; retention never removes them. An experiment runs every item of a
 * dataset as a comparison run (`svc_runs.experiment_item`), a few at a time, and keeps each item's output, figures
 * and scores beside the run, so it stays readable once retention has removed the runs. Such a run triggers no
 * webhook, Slack message or mail, and its thread is left out of the default thread list.
 */
export const datasets: Migration = {
  name: '0014_datasets',
  // New tables, nullable columns, and functions that answer as before for every run the release before starts.
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_datasets (
         id uuid PRIMARY KEY,
         project_id uuid NOT NULL REFERENCES svc_projects(id) ON DELETE CASCADE,
         name text NOT NULL,
         description text,
         created_by uuid NOT NULL,
         created_by_name text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await client.query(`CREATE INDEX IF NOT EXISTS svc_datasets_by_project ON svc_datasets (project_id, created_at)`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_dataset_items (
         id uuid PRIMARY KEY,
         dataset_id uuid NOT NULL REFERENCES svc_datasets(id) ON DELETE CASCADE,
         position integer NOT NULL,
         message text NOT NULL,
         project_path text,
         expected text,
         checks jsonb NOT NULL DEFAULT '[]',
         source_run_id uuid,
         -- What the item's run recorded (storage/types.ts ComparedRecord): tool calls' answers and gates' decisions.
         record jsonb NOT NULL DEFAULT '{"calls": [], "decisions": []}',
         created_at timestamptz NOT NULL DEFAULT now(),
         UNIQUE (dataset_id, position)
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_experiments (
         id uuid PRIMARY KEY,
         dataset_id uuid NOT NULL REFERENCES svc_datasets(id) ON DELETE CASCADE,
         name text,
         agent text NOT NULL,
         agent_version text NOT NULL,
         manifest_hash text NOT NULL,
         model text NOT NULL,
         checks jsonb NOT NULL DEFAULT '[]',
         status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'cancelled')),
         created_by uuid NOT NULL,
         created_by_name text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         finished_at timestamptz
       )`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_experiments_by_dataset ON svc_experiments (dataset_id, created_at)`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_experiments_running ON svc_experiments (created_at) WHERE status = 'running'`,
    );
    // An item's place in an experiment. The item's input and checks are copied in when the experiment starts: an
    // edit to the dataset afterwards changes the next experiment, not this one.
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_experiment_items (
         experiment_id uuid NOT NULL REFERENCES svc_experiments(id) ON DELETE CASCADE,
         item_id uuid NOT NULL,
         position integer NOT NULL,
         message text NOT NULL,
         project_path text,
         expected text,
         checks jsonb NOT NULL,
         source_run_id uuid,
         status text NOT NULL DEFAULT 'pending'
           CHECK (status IN ('pending', 'starting', 'running', 'scoring', 'done', 'failed')),
         -- Who works on it now ('starting', 'scoring'), until when: a process that stopped leaves it to another.
         claimed_until timestamptz,
         run_id uuid,
         run_status text,
         output text,
         input_tokens integer,
         output_tokens integer,
         cost_usd numeric,
         first_token_ms double precision,
         run_ms double precision,
         scores jsonb NOT NULL DEFAULT '[]',
         error text,
         PRIMARY KEY (experiment_id, item_id)
       )`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_experiment_items_open ON svc_experiment_items (experiment_id, position)
        WHERE status NOT IN ('done', 'failed')`,
    );
    await client.query(`ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS experiment_item uuid`);
    await client.query(`ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS experiment_id uuid`);
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_webhook_run_data(p_run uuid, OUT project uuid, OUT data jsonb)
       LANGUAGE sql STABLE AS $fn$
         SELECT t.project_id,
                jsonb_build_object('run_id', r.id, 'thread_id', r.thread_id, 'project_id', t.project_id,
                                   'agent', r.agent, 'model', r.model)
           FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id
          WHERE r.id = p_run AND r.comparison_of IS NULL AND r.experiment_item IS NULL
       $fn$`,
    );
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
          WHERE r.id = p_run AND r.comparison_of IS NULL AND r.experiment_item IS NULL;
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
