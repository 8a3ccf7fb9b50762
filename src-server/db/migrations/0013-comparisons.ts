import type { Migration } from './migration';

/**
 * Comparisons (docs/compare.md): a run that runs another run's input again, on another model or version of its agent,
 * in a thread of its own, and acts on nothing. The run and its thread name the run compared; a tool call of the
 * comparison says whether it was given the original's recorded answer, ran (read-only), or was not run. A comparison
 * triggers no webhook, Slack message or mail: the functions that find a run's project for them find none for it. A
 * phase's row keeps when its first answer token arrived.
 */
export const comparisons: Migration = {
  name: '0013_comparisons',
  // Nullable columns, and functions that answer as before for every run the release before starts.
  compatible: true,
  async up(client) {
    await client.query(`ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS comparison_of uuid`);
    // When a phase's first answer token arrived: a comparison, an experiment, shows each run's time to first token.
    await client.query(`ALTER TABLE svc_run_nodes ADD COLUMN IF NOT EXISTS first_token_at double precision`);
    await client.query(`ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS comparison_of uuid`);
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_runs_comparisons ON svc_runs (comparison_of) WHERE comparison_of IS NOT NULL`,
    );
    await client.query(
      `ALTER TABLE svc_tool_calls ADD COLUMN IF NOT EXISTS replay text
         CHECK (replay IN ('recorded', 'ran', 'not_run'))`,
    );
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_webhook_run_data(p_run uuid, OUT project uuid, OUT data jsonb)
       LANGUAGE sql STABLE AS $fn$
         SELECT t.project_id,
                jsonb_build_object('run_id', r.id, 'thread_id', r.thread_id, 'project_id', t.project_id,
                                   'agent', r.agent, 'model', r.model)
           FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id
          WHERE r.id = p_run AND r.comparison_of IS NULL
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
          WHERE r.id = p_run AND r.comparison_of IS NULL;
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
