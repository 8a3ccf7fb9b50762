import type { Migration } from './migration';

/**
 * What a team's server needs in its first year (docs/operations.md): spend limits, secrets per project and
 * organisation, and an audit log.
 *
 * - `svc_budgets`: a limit per organisation or project (optionally per user within it), per day or month, in money
 *   and/or tokens; `svc_budget_warnings` holds the one warning of each budget's period, so it is sent once however
 *   many processes see the level crossed.
 * - `svc_secrets`: values sealed by the service's SecretBox (never readable in the database without its key).
 * - `svc_audit_events`: append-only. A trigger refuses UPDATE, DELETE and TRUNCATE, whoever asks, and nothing refers
 *   to a row elsewhere (no foreign keys), so deleting a project or a user never touches what was recorded about it.
 */
export const budgetsSecretsAudit: Migration = {
  name: '0015_budgets_secrets_audit',
  // New tables only: the release before never reads them.
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_budgets (
         id uuid PRIMARY KEY,
         scope_type text NOT NULL CHECK (scope_type IN ('org', 'project')),
         scope_id uuid NOT NULL,
         user_id uuid,
         period text NOT NULL CHECK (period IN ('day', 'month')),
         amount_usd numeric,
         tokens bigint,
         warn_at double precision NOT NULL DEFAULT 0.8,
         time_zone text NOT NULL DEFAULT 'UTC',
         set_by uuid,
         set_at timestamptz NOT NULL DEFAULT now(),
         CHECK (amount_usd IS NOT NULL OR tokens IS NOT NULL)
       )`,
    );
    // One budget per scope, period and user (the nil uuid stands for "everyone in the scope").
    await client.query(
      `CREATE UNIQUE INDEX IF NOT EXISTS svc_budgets_one_per_period ON svc_budgets
         (scope_type, scope_id, period, COALESCE(user_id, '00000000-0000-0000-0000-000000000000'::uuid))`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_budget_warnings (
         budget_id uuid NOT NULL REFERENCES svc_budgets(id) ON DELETE CASCADE,
         period_start timestamptz NOT NULL,
         level text NOT NULL CHECK (level IN ('warning', 'exceeded')),
         at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (budget_id, period_start, level)
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_secrets (
         scope_type text NOT NULL CHECK (scope_type IN ('org', 'project')),
         scope_id uuid NOT NULL,
         name text NOT NULL,
         sealed text NOT NULL,
         set_by uuid,
         set_by_name text,
         set_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (scope_type, scope_id, name)
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_audit_events (
         id bigserial PRIMARY KEY,
         at timestamptz NOT NULL DEFAULT now(),
         actor_id uuid,
         actor_name text NOT NULL,
         via text NOT NULL,
         ip text,
         org_id uuid,
         project_id uuid,
         action text NOT NULL,
         target text NOT NULL,
         before jsonb,
         after jsonb
       )`,
    );
    await client.query(`CREATE INDEX IF NOT EXISTS svc_audit_events_by_org ON svc_audit_events (org_id, id)`);
    await client.query(`CREATE INDEX IF NOT EXISTS svc_audit_events_by_project ON svc_audit_events (project_id, id)`);
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
       BEGIN
         RAISE EXCEPTION 'the audit log is append-only: % is refused', TG_OP USING ERRCODE = 'insufficient_privilege';
       END $fn$`,
    );
    await client.query(`DROP TRIGGER IF EXISTS svc_audit_events_no_change ON svc_audit_events`);
    await client.query(
      `CREATE TRIGGER svc_audit_events_no_change BEFORE UPDATE OR DELETE ON svc_audit_events
         FOR EACH ROW EXECUTE FUNCTION svc_audit_events_append_only()`,
    );
    await client.query(`DROP TRIGGER IF EXISTS svc_audit_events_no_truncate ON svc_audit_events`);
    await client.query(
      `CREATE TRIGGER svc_audit_events_no_truncate BEFORE TRUNCATE ON svc_audit_events
         FOR EACH STATEMENT EXECUTE FUNCTION svc_audit_events_append_only()`,
    );
  },
};
