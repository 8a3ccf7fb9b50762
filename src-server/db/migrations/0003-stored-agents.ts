import type { Migration } from './migration';

/**
 * Agents people make themselves (docs/agents.md): the text of an agent or command stored per project, every save an
 * immutable version, and the manifests runs are pinned to.
 *
 * - svc_agent_manifests: every compiled manifest a run may have to resume on, by the SHA-256 of its JSON: the
 *   shipped ones (each process records its own at start), the stored versions and the drafts tried in the studio.
 *   Immutable, so a process caches what it read for as long as it likes.
 * - svc_agents / svc_agent_versions: a stored agent (a name unique in its organisation while it exists) and its
 *   versions, numbered from 1. Deleting an agent marks it deleted: its runs and versions stay readable.
 * - svc_runs.agent_version and manifest_hash: what a run runs, recorded at its start; it resumes on it whatever was
 *   published since. NULL for runs the release before started (they run on the shipped file by name).
 * - svc_threads.draft: a thread a draft was tried in, left out of the default thread list.
 * - svc_org_tool_policies: an organisation's floor of tool policies, which no agent loosens; a decision on a tool
 *   call records where its policy came from (svc_gate_decisions.policy_source).
 * - svc_mcp_servers: the instance's registry of MCP servers, which stored agents name (they declare no program).
 *
 * svc_start_agent_run is svc_start_run with the three new values; svc_start_run stays for the release before and
 * goes in a later (contract) migration. Each statement may run again (on a database whose record of migrations was
 * lost), as the baseline's may.
 */
export const storedAgents: Migration = {
  name: '0003_stored_agents',
  // New tables, nullable columns and a new function: the release before works on as it did.
  compatible: true,
  async up(client) {
    for (const statement of STATEMENTS) await client.query(statement);
  },
};

const STATEMENTS = [
  `CREATE TABLE IF NOT EXISTS svc_agent_manifests (
     hash text PRIMARY KEY,
     name text NOT NULL,
     manifest jsonb NOT NULL,
     layout jsonb NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE IF NOT EXISTS svc_agents (
     id uuid PRIMARY KEY,
     org_id uuid NOT NULL REFERENCES svc_orgs(id) ON DELETE CASCADE,
     project_id uuid NOT NULL REFERENCES svc_projects(id) ON DELETE CASCADE,
     name text NOT NULL,
     kind text NOT NULL CHECK (kind IN ('agent', 'command')),
     shared boolean NOT NULL DEFAULT false,
     current_version integer NOT NULL,
     created_by uuid REFERENCES svc_users(id) ON DELETE SET NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     deleted_at timestamptz,
     deleted_by uuid REFERENCES svc_users(id) ON DELETE SET NULL
   )`,
  `CREATE UNIQUE INDEX IF NOT EXISTS svc_agents_name ON svc_agents (org_id, name) WHERE deleted_at IS NULL`,
  `CREATE INDEX IF NOT EXISTS svc_agents_project ON svc_agents (project_id)`,
  `CREATE TABLE IF NOT EXISTS svc_agent_versions (
     agent_id uuid NOT NULL REFERENCES svc_agents(id) ON DELETE CASCADE,
     version integer NOT NULL CHECK (version >= 1),
     source text NOT NULL,
     manifest_hash text NOT NULL REFERENCES svc_agent_manifests(hash),
     note text NOT NULL DEFAULT '',
     created_by uuid REFERENCES svc_users(id) ON DELETE SET NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (agent_id, version)
   )`,
  // Every process keeps the current versions in memory: a change anywhere is announced, and each reads it again.
  `CREATE OR REPLACE FUNCTION svc_agents_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     PERFORM pg_notify('svc_agents', COALESCE(NEW.id, OLD.id)::text);
     RETURN NULL;
   END
   $fn$`,
  `CREATE OR REPLACE TRIGGER svc_agents_changed AFTER INSERT OR UPDATE OR DELETE ON svc_agents
     FOR EACH ROW EXECUTE FUNCTION svc_agents_changed()`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS agent_version text`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS manifest_hash text`,
  `ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS draft boolean NOT NULL DEFAULT false`,
  `CREATE TABLE IF NOT EXISTS svc_org_tool_policies (
     org_id uuid PRIMARY KEY REFERENCES svc_orgs(id) ON DELETE CASCADE,
     policies jsonb NOT NULL,
     updated_by uuid REFERENCES svc_users(id) ON DELETE SET NULL,
     updated_at timestamptz NOT NULL DEFAULT now()
   )`,
  `ALTER TABLE svc_gate_decisions ADD COLUMN IF NOT EXISTS policy_source text`,
  `CREATE TABLE IF NOT EXISTS svc_mcp_servers (
     name text PRIMARY KEY,
     server jsonb NOT NULL,
     created_by uuid REFERENCES svc_users(id) ON DELETE SET NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE OR REPLACE FUNCTION svc_start_agent_run(
     p_run uuid, p_thread uuid, p_new_thread boolean, p_project uuid, p_agent text, p_model text, p_message text,
     p_project_path text, p_user uuid, p_owner text, p_lease_s double precision, p_seq_reserved integer,
     p_forked_from jsonb, p_local boolean, p_local_cap integer, p_strategy text, p_trace_context text,
     p_agent_version text, p_manifest_hash text, p_draft boolean)
   RETURNS TABLE (outcome text, active_id uuid, active_status text, going integer) LANGUAGE plpgsql AS $fn$
   DECLARE
     n integer;
     a record;
     q record;
   BEGIN
     IF p_local AND p_local_cap IS NOT NULL THEN
       PERFORM pg_advisory_xact_lock(7305117, hashtext(p_user::text));
       SELECT count(*) INTO n FROM svc_runs WHERE created_by = p_user AND status = 'running' AND local_runtime;
       IF n >= p_local_cap THEN
         RETURN QUERY SELECT 'over_limit'::text, NULL::uuid, NULL::text, n;
         RETURN;
       END IF;
     END IF;
     IF p_new_thread THEN
       INSERT INTO svc_threads (id, agent, model, last_message, project_path, project_id, created_by, draft)
       VALUES (p_thread, p_agent, p_model, p_message, p_project_path, p_project, p_user, p_draft);
     ELSE
       PERFORM 1 FROM svc_threads WHERE id = p_thread FOR UPDATE;
       -- The thread's active run first, else the first in its line.
       SELECT id, status INTO a FROM svc_runs
        WHERE thread_id = p_thread AND status IN ('running', 'waiting_approval', 'queued')
        ORDER BY status = 'queued', started_at DESC LIMIT 1;
       IF FOUND THEN
         IF p_strategy = 'enqueue' THEN
           SELECT count(*) INTO n FROM svc_runs WHERE thread_id = p_thread AND status = 'queued';
           -- The run's first event (run_queued, id 1) is stored with it; it starts after it (claimQueued).
           INSERT INTO svc_runs (id, thread_id, agent, model, status, message, project_path, created_by,
                                 seq_reserved, event_seq, forked_from, local_runtime, queued_at, trace_context,
                                 agent_version, manifest_hash)
           VALUES (p_run, p_thread, p_agent, p_model, 'queued', p_message, p_project_path, p_user, 1, 1,
                   p_forked_from, p_local, clock_timestamp(), p_trace_context, p_agent_version, p_manifest_hash);
           INSERT INTO svc_run_events (run_id, seq, type, data)
           VALUES (p_run, 1, 'run_queued', json_build_object('type', 'run_queued', 'run_id', p_run,
                                                             'thread_id', p_thread, 'position', n + 1)::text);
           RETURN QUERY SELECT 'queued'::text, a.id, a.status, n + 1;
           RETURN;
         ELSIF p_strategy = 'interrupt' THEN
           FOR q IN SELECT id FROM svc_runs WHERE thread_id = p_thread AND status IN ('running', 'waiting_approval', 'queued')
                     ORDER BY status <> 'queued' LOOP
             PERFORM svc_cancel_run(q.id, 'interrupted by run ' || p_run);
           END LOOP;
         ELSE
           RETURN QUERY SELECT 'active'::text, a.id, a.status, NULL::integer;
           RETURN;
         END IF;
       END IF;
     END IF;
     IF NOT p_new_thread THEN
       -- A run names the thread's path (the one it was given, else the thread's own); a branch keeps the thread's.
       UPDATE svc_threads SET last_message = p_message, model = p_model, updated_at = now(),
              project_path = COALESCE(CASE WHEN p_forked_from IS NULL THEN p_project_path END, project_path)
        WHERE id = p_thread;
     END IF;
     INSERT INTO svc_runs (id, thread_id, agent, model, status, message, project_path, created_by, owner_id,
                           lease_until, seq_reserved, forked_from, local_runtime, trace_context, agent_version,
                           manifest_hash)
     VALUES (p_run, p_thread, p_agent, p_model, 'running', p_message, p_project_path, p_user, p_owner,
             now() + make_interval(secs => p_lease_s), p_seq_reserved, p_forked_from, p_local, p_trace_context,
             p_agent_version, p_manifest_hash);
     RETURN QUERY SELECT 'started'::text, NULL::uuid, NULL::text, NULL::integer;
   END
   $fn$`,
];
