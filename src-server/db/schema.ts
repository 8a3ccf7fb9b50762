import type { Pool } from './pool';
import { withAdvisoryLock } from './pool';

/** Same key for every process on one database: init_db runs one at a time. */
export const MIGRATION_LOCK_KEY = 7_305_112;

/**
 * Tables first (CREATE TABLE IF NOT EXISTS), then columns added after a table first shipped
 * (ADD COLUMN IF NOT EXISTS), then indexes. Append here; never edit a shipped statement.
 */
const statements = [
  `CREATE TABLE IF NOT EXISTS svc_orgs (
     id uuid PRIMARY KEY,
     name text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE IF NOT EXISTS svc_teams (
     id uuid PRIMARY KEY,
     org_id uuid NOT NULL REFERENCES svc_orgs(id) ON DELETE CASCADE,
     name text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE IF NOT EXISTS svc_projects (
     id uuid PRIMARY KEY,
     team_id uuid NOT NULL REFERENCES svc_teams(id) ON DELETE CASCADE,
     name text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE IF NOT EXISTS svc_users (
     id uuid PRIMARY KEY,
     issuer text NOT NULL,
     subject text NOT NULL,
     email text,
     name text,
     created_at timestamptz NOT NULL DEFAULT now(),
     last_login_at timestamptz,
     UNIQUE (issuer, subject)
   )`,
  `CREATE TABLE IF NOT EXISTS svc_memberships (
     user_id uuid NOT NULL REFERENCES svc_users(id) ON DELETE CASCADE,
     scope_type text NOT NULL CHECK (scope_type IN ('org', 'team', 'project')),
     scope_id uuid NOT NULL,
     role text NOT NULL CHECK (role IN ('admin', 'owner', 'member', 'viewer')),
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (user_id, scope_type, scope_id)
   )`,
  `CREATE TABLE IF NOT EXISTS svc_threads (
     id uuid PRIMARY KEY,
     agent text NOT NULL,
     model text,
     last_message text,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE IF NOT EXISTS svc_runs (
     id uuid PRIMARY KEY,
     thread_id uuid NOT NULL REFERENCES svc_threads(id) ON DELETE CASCADE,
     agent text NOT NULL,
     model text,
     status text NOT NULL,
     output text,
     error_detail text,
     started_at timestamptz NOT NULL DEFAULT now(),
     finished_at timestamptz
   )`,
  `CREATE TABLE IF NOT EXISTS svc_run_nodes (
     id bigserial PRIMARY KEY,
     run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
     node_id text NOT NULL,
     status text NOT NULL,
     output text NOT NULL DEFAULT '',
     entered_at double precision NOT NULL,
     exited_at double precision
   )`,
  `CREATE TABLE IF NOT EXISTS svc_node_configs (
     org_id uuid NOT NULL REFERENCES svc_orgs(id) ON DELETE CASCADE,
     agent text NOT NULL,
     node_id text NOT NULL,
     instructions_override text,
     classification_labels text,
     routing_overrides jsonb NOT NULL DEFAULT '[]',
     notes text,
     updated_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (org_id, agent, node_id)
   )`,
  // Columns added after the first release of their table.
  `ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS project_id uuid REFERENCES svc_projects(id) ON DELETE CASCADE`,
  `ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS project_path text`,
  `ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS created_by uuid`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS message text`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS project_path text`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS created_by uuid`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS routes jsonb NOT NULL DEFAULT '[]'`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS event_seq integer NOT NULL DEFAULT 0`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS pending_gate jsonb`,
  // Cluster runs: the stored event stream, and the lease of the process executing a run.
  `CREATE TABLE IF NOT EXISTS svc_run_events (
     run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
     seq integer NOT NULL,
     type text NOT NULL,
     data text NOT NULL,
     PRIMARY KEY (run_id, seq)
   )`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS owner_id text`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS lease_until timestamptz`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 1`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS seq_reserved integer NOT NULL DEFAULT 0`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS resume_decision jsonb`,
  `CREATE INDEX IF NOT EXISTS svc_runs_leased ON svc_runs (lease_until) WHERE status = 'running'`,
  `CREATE INDEX IF NOT EXISTS svc_threads_recent ON svc_threads (updated_at DESC, id)`,
  `CREATE INDEX IF NOT EXISTS svc_runs_by_thread ON svc_runs (thread_id, started_at DESC)`,
  `CREATE INDEX IF NOT EXISTS svc_runs_running ON svc_runs (started_at) WHERE status = 'running'`,
  `CREATE INDEX IF NOT EXISTS svc_run_nodes_by_run ON svc_run_nodes (run_id, id)`,
];

/**
 * init_db(): creates every table if missing and adds newer columns idempotently.
 * Safe to run any number of times, and from several processes at once (advisory lock).
 */
export async function initDb(pool: Pool): Promise<void> {
  await withAdvisoryLock(pool, MIGRATION_LOCK_KEY, async () => {
    for (const sql of statements) await pool.query(sql);
  });
}
