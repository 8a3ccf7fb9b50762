import type { Migration } from './migration';

/**
 * Threads imported from another installation as read-only history (docs/http-api.md#export-and-import-of-a-thread).
 *
 * - svc_threads.imported_from, imported_exported_at, imported_at: where an imported thread came from (the thread's id
 *   on the installation that exported it), when it was exported, and when it was imported here; null on every other
 *   thread.
 * - svc_runs.imported_at: the mark of an imported run. Such a run keeps the status it was exported with (a run that
 *   was running, queued or waiting at a gate stays so), and the engine's queries leave it alone: no lease sweep, no
 *   orphan sweep, no gate expiry and no queue ever picks it up (runs.repository.ts).
 * - The functions that find a run's project for a webhook, a Slack message or a mail find none for an imported run,
 *   as for a comparison: the rows an import writes (its decisions, whose triggers fire on INSERT) send nothing.
 *
 * A process of the release before, beside this one during an upgrade, does not know the mark: an import is best made
 * once every process runs this release.
 */
export const importedThreads: Migration = {
  name: '0017_imported_threads',
  // Nullable columns, and functions that answer as before for every run the release before writes.
  compatible: true,
  async up(client) {
    await client.query(`ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS imported_from uuid`);
    await client.query(`ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS imported_exported_at timestamptz`);
    await client.query(`ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS imported_at timestamptz`);
    await client.query(`ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS imported_at timestamptz`);
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_webhook_run_data(p_run uuid, OUT project uuid, OUT data jsonb)
       LANGUAGE sql STABLE AS $fn$
         SELECT t.project_id,
                jsonb_build_object('run_id', r.id, 'thread_id', r.thread_id, 'project_id', t.project_id,
                                   'agent', r.agent, 'model', r.model)
           FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id
          WHERE r.id = p_run AND r.comparison_of IS NULL AND r.experiment_item IS NULL AND r.imported_at IS NULL
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
          WHERE r.id = p_run AND r.comparison_of IS NULL AND r.experiment_item IS NULL AND r.imported_at IS NULL;
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
