import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID, DEFAULT_TEAM_ID } from '../../contracts/tenancy';
import { RUN_EVENTS_CHANNEL } from '../run-events.repository';
import { CANCEL_CHANNEL, RUN_READY_CHANNEL } from '../run-notifications';
import type { Migration } from './migration';

/**
 * The schema as the service had it when it began to number its migrations (docs/upgrading.md): every table, column,
 * index, function and trigger, and the one-time upgrades of rows written by older versions. Each statement may run on
 * a database that already has what it makes (CREATE … IF NOT EXISTS, ADD COLUMN IF NOT EXISTS, CREATE OR REPLACE, an
 * UPDATE of the rows not yet upgraded), so that a database made by any earlier version, which ran these statements
 * at every start, comes out of it as a new one does. Each function is created here once; the forms older versions
 * made under other signatures are dropped.
 *
 * Shipped: never edit it. A change to the schema is a new migration after it.
 */
export const baseline: Migration = {
  name: '0001_baseline',
  // The release before (05ef644) runs on it: it is that release's schema, and an organisation's folders.
  compatible: true,
  async up(client) {
    for (const sql of statements) await client.query(sql);
  },
};

/**
 * Tables first, then columns added after a table first shipped, then indexes, in the order the versions before
 * added them.
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
  // A run of consecutive token (or thinking) events of one run stored in one row: `seq` is its first id, `seq_last` its
  // last, and `data` their JSON texts joined by newlines (run-events.repository.ts). NULL for a row of one event.
  `ALTER TABLE svc_run_events ADD COLUMN IF NOT EXISTS seq_last integer`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS owner_id text`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS lease_until timestamptz`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 1`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS seq_reserved integer NOT NULL DEFAULT 0`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS resume_decision jsonb`,
  // The local-runtime queue, shared by every process on the database (models/local-queue.ts).
  `CREATE TABLE IF NOT EXISTS svc_llm_queue (
     ticket bigserial PRIMARY KEY,
     owner_id text NOT NULL,
     tenant text NOT NULL,
     label text NOT NULL,
     enqueued_at timestamptz NOT NULL DEFAULT now(),
     granted_at timestamptz,
     lease_until timestamptz NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS svc_llm_queue_stats (
     id integer PRIMARY KEY CHECK (id = 1),
     served bigint NOT NULL DEFAULT 0,
     timed_out bigint NOT NULL DEFAULT 0,
     recent_s double precision[] NOT NULL DEFAULT '{}'
   )`,
  `INSERT INTO svc_llm_queue_stats (id) VALUES (1) ON CONFLICT (id) DO NOTHING`,
  `CREATE TABLE IF NOT EXISTS svc_llm_queue_tenants (
     tenant text PRIMARY KEY,
     last_granted_at timestamptz NOT NULL
   )`,
  // Grants free slots to the waiters next in line: round robin across organisations — the one served longest ago goes
  // first — then, within it, across its projects the same way, and first come first served within a project. So one
  // tenant that spreads its runs over many projects still gets one turn in a round, as every other organisation does.
  // Tickets whose process stopped renewing them (it died) are dropped first, which gives their slots back. One
  // transaction-scoped lock serialises every grant in the cluster.
  `CREATE OR REPLACE FUNCTION svc_llm_grant(slots integer) RETURNS void LANGUAGE plpgsql AS $fn$
   DECLARE
     free integer;
     next_ticket bigint;
     next_tenant text;
     next_org text;
     granted text := '';
   BEGIN
     PERFORM pg_advisory_xact_lock(7305113);
     DELETE FROM svc_llm_queue WHERE lease_until < now();
     SELECT slots - count(*) INTO free FROM svc_llm_queue WHERE granted_at IS NOT NULL;
     FOR i IN 1..free LOOP
       SELECT q.ticket, q.tenant, q.org INTO next_ticket, next_tenant, next_org
         FROM svc_llm_queue q
         LEFT JOIN svc_llm_queue_orgs o ON o.org = q.org
         LEFT JOIN svc_llm_queue_tenants t ON t.tenant = q.tenant
        WHERE q.granted_at IS NULL
        ORDER BY o.last_granted_at NULLS FIRST, t.last_granted_at NULLS FIRST, q.ticket
        LIMIT 1;
       EXIT WHEN NOT FOUND;
       UPDATE svc_llm_queue SET granted_at = now() WHERE ticket = next_ticket;
       INSERT INTO svc_llm_queue_tenants (tenant, last_granted_at) VALUES (next_tenant, clock_timestamp())
       ON CONFLICT (tenant) DO UPDATE SET last_granted_at = excluded.last_granted_at;
       INSERT INTO svc_llm_queue_orgs (org, last_granted_at) VALUES (next_org, clock_timestamp())
       ON CONFLICT (org) DO UPDATE SET last_granted_at = excluded.last_granted_at;
       granted := granted || next_ticket || ',';
     END LOOP;
     -- The tickets granted now travel with the notice: their waiters start without reading the queue. Only waiters
     -- listen: a change with nobody waiting (a call that got its slot at once, or gave it back with nobody in line) is
     -- announced to no one, which spares every process a notice, and the commit its queue lock, per model call.
     IF granted <> '' OR EXISTS (SELECT 1 FROM svc_llm_queue WHERE granted_at IS NULL) THEN
       PERFORM pg_notify('svc_llm_queue', rtrim(granted, ','));
     END IF;
   END
   $fn$`,
  // The form of svc_llm_enqueue without a caller's key, from databases of older versions (it is defined below).
  `DROP FUNCTION IF EXISTS svc_llm_enqueue(text, text, text, double precision, integer)`,
  `CREATE INDEX IF NOT EXISTS svc_llm_queue_by_owner ON svc_llm_queue (owner_id)`,
  `CREATE INDEX IF NOT EXISTS svc_runs_leased ON svc_runs (lease_until) WHERE status = 'running'`,
  `CREATE INDEX IF NOT EXISTS svc_threads_recent ON svc_threads (updated_at DESC, id)`,
  `CREATE INDEX IF NOT EXISTS svc_runs_by_thread ON svc_runs (thread_id, started_at DESC)`,
  `CREATE INDEX IF NOT EXISTS svc_runs_running ON svc_runs (started_at) WHERE status = 'running'`,
  `CREATE INDEX IF NOT EXISTS svc_run_nodes_by_run ON svc_run_nodes (run_id, id)`,
  // The reason given to the rejection or the cancel that ended the run.
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS end_reason text`,
  // A phase's figures from the model runtime: queue wait, token counts, warnings, a thinking model's reasoning.
  `ALTER TABLE svc_run_nodes ADD COLUMN IF NOT EXISTS queue_wait_ms double precision`,
  `ALTER TABLE svc_run_nodes ADD COLUMN IF NOT EXISTS prompt_tokens integer`,
  `ALTER TABLE svc_run_nodes ADD COLUMN IF NOT EXISTS output_tokens integer`,
  `ALTER TABLE svc_run_nodes ADD COLUMN IF NOT EXISTS warnings jsonb NOT NULL DEFAULT '[]'::jsonb`,
  `ALTER TABLE svc_run_nodes ADD COLUMN IF NOT EXISTS thinking text`,
  // A project's own phase overrides, applied per node over its organisation's (svc_node_configs).
  `CREATE TABLE IF NOT EXISTS svc_project_node_configs (
     project_id uuid NOT NULL REFERENCES svc_projects(id) ON DELETE CASCADE,
     agent text NOT NULL,
     node_id text NOT NULL,
     instructions_override text,
     classification_labels text,
     routing_overrides jsonb NOT NULL DEFAULT '[]',
     notes text,
     updated_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (project_id, agent, node_id)
   )`,
  // A run on a branch: the checkpoint it continues from, the run that wrote it, and the phase outputs it edited.
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS forked_from jsonb`,
  // Approvals (docs/approvals.md): when a run stopped at its gate, and when that gate expires.
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS gate_waiting_since timestamptz`,
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS gate_expires_at timestamptz`,
  `CREATE INDEX IF NOT EXISTS svc_runs_gate_expiry ON svc_runs (gate_expires_at) WHERE status = 'waiting_approval'`,
  // Every decision taken at a gate. `wait_seq` is the gate_waiting event the decision answers: one stop at the gate,
  // so that a person's approval counts once per stop, and a gate reached again (after a respond) is decided afresh.
  `CREATE TABLE IF NOT EXISTS svc_gate_decisions (
     id bigserial PRIMARY KEY,
     run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
     thread_id uuid NOT NULL REFERENCES svc_threads(id) ON DELETE CASCADE,
     gate text NOT NULL,
     wait_seq integer NOT NULL,
     decision text NOT NULL CHECK (decision IN ('approve', 'edit', 'respond', 'reject', 'expire')),
     decided_by text,
     decided_by_name text NOT NULL,
     role text,
     reason text,
     edits jsonb,
     response text,
     outcome text,
     route_to text,
     decided_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX IF NOT EXISTS svc_gate_decisions_by_run ON svc_gate_decisions (run_id, id)`,
  // The record of a decision is kept as it was taken: a row may go with its thread, never change.
  `CREATE OR REPLACE FUNCTION svc_gate_decisions_immutable() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     RAISE EXCEPTION 'a gate decision is a record: it cannot be changed';
   END
   $fn$`,
  `CREATE OR REPLACE TRIGGER svc_gate_decisions_no_update BEFORE UPDATE ON svc_gate_decisions
     FOR EACH ROW EXECUTE FUNCTION svc_gate_decisions_immutable()`,
  // Webhooks (docs/webhooks.md): a project's or an organisation's, and their outbox. A delivery row is written by
  // the triggers below in the transaction of the change it reports, so a crash can lose the change and its
  // deliveries together, never one without the other; the workers of every process send them (webhooks/).
  `CREATE TABLE IF NOT EXISTS svc_webhooks (
     id uuid PRIMARY KEY,
     project_id uuid REFERENCES svc_projects(id) ON DELETE CASCADE,
     org_id uuid REFERENCES svc_orgs(id) ON DELETE CASCADE,
     url text NOT NULL,
     events text[] NOT NULL,
     secret text NOT NULL,
     created_by text,
     created_at timestamptz NOT NULL DEFAULT now(),
     CHECK ((project_id IS NULL) <> (org_id IS NULL))
   )`,
  `CREATE INDEX IF NOT EXISTS svc_webhooks_by_project ON svc_webhooks (project_id) WHERE project_id IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS svc_webhooks_by_org ON svc_webhooks (org_id) WHERE org_id IS NOT NULL`,
  // `id` is the webhook-id header, the same on every attempt. `payload` is the exact text signed and sent.
  `CREATE TABLE IF NOT EXISTS svc_webhook_deliveries (
     id uuid PRIMARY KEY,
     webhook_id uuid NOT NULL REFERENCES svc_webhooks(id) ON DELETE CASCADE,
     event_type text NOT NULL,
     payload text NOT NULL,
     status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
     attempts integer NOT NULL DEFAULT 0,
     next_attempt_at timestamptz NOT NULL DEFAULT now(),
     claimed_by text,
     claimed_at timestamptz,
     lease_until timestamptz,
     created_at timestamptz NOT NULL DEFAULT now(),
     delivered_at timestamptz
   )`,
  `CREATE INDEX IF NOT EXISTS svc_webhook_deliveries_due ON svc_webhook_deliveries (next_attempt_at)
     WHERE status = 'pending'`,
  `CREATE INDEX IF NOT EXISTS svc_webhook_deliveries_by_webhook ON svc_webhook_deliveries (webhook_id, created_at DESC)`,
  `CREATE TABLE IF NOT EXISTS svc_webhook_attempts (
     id bigserial PRIMARY KEY,
     delivery_id uuid NOT NULL REFERENCES svc_webhook_deliveries(id) ON DELETE CASCADE,
     attempt integer NOT NULL,
     attempted_at timestamptz NOT NULL,
     duration_ms double precision,
     http_status integer,
     error text
   )`,
  `CREATE INDEX IF NOT EXISTS svc_webhook_attempts_by_delivery ON svc_webhook_attempts (delivery_id, attempt)`,
  // Times in payloads as the API writes them (JavaScript's toISOString): UTC, milliseconds, Z.
  `CREATE OR REPLACE FUNCTION svc_webhook_time(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
     SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
   $fn$`,
  // One delivery per webhook of the run's project, or of the organisation that contains it, subscribed to the event;
  // the notice reaches the workers when the transaction commits. `timestamp` is the transaction's time: the change's.
  `CREATE OR REPLACE FUNCTION svc_webhook_enqueue(p_type text, p_project uuid, p_data jsonb)
   RETURNS void LANGUAGE plpgsql AS $fn$
   DECLARE
     queued integer;
   BEGIN
     INSERT INTO svc_webhook_deliveries (id, webhook_id, event_type, payload)
     SELECT gen_random_uuid(), w.id, p_type,
            jsonb_build_object('type', p_type, 'timestamp', svc_webhook_time(now()), 'data', p_data)::text
       FROM svc_webhooks w
      WHERE p_type = ANY (w.events)
        AND (w.project_id = p_project
             OR w.org_id = (SELECT t.org_id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id
                             WHERE p.id = p_project));
     GET DIAGNOSTICS queued = ROW_COUNT;
     IF queued > 0 THEN
       PERFORM pg_notify('svc_webhooks', '');
     END IF;
   END
   $fn$`,
  // What a run's data says in every payload.
  `CREATE OR REPLACE FUNCTION svc_webhook_run_data(p_run uuid, OUT project uuid, OUT data jsonb)
   LANGUAGE sql STABLE AS $fn$
     SELECT t.project_id,
            jsonb_build_object('run_id', r.id, 'thread_id', r.thread_id, 'project_id', t.project_id,
                               'agent', r.agent, 'model', r.model)
       FROM svc_runs r JOIN svc_threads t ON t.id = r.thread_id
      WHERE r.id = p_run
   $fn$`,
  // A run's status change: stopped at a gate, completed, failed. Most installations have no webhook, and svc_runs
  // changes often: the trigger fires only on those three changes, and leaves at once when no webhook exists.
  `CREATE OR REPLACE FUNCTION svc_webhook_run_status() RETURNS trigger LANGUAGE plpgsql AS $fn$
   DECLARE
     kind text;
     info record;
   BEGIN
     IF NOT EXISTS (SELECT 1 FROM svc_webhooks) THEN
       RETURN NULL;
     END IF;
     kind := CASE NEW.status WHEN 'waiting_approval' THEN 'gate.waiting' WHEN 'completed' THEN 'run.completed'
                             ELSE 'run.failed' END;
     SELECT * INTO info FROM svc_webhook_run_data(NEW.id);
     IF kind = 'gate.waiting' THEN
       info.data := info.data || jsonb_build_object('gate', NEW.pending_gate->>'node',
                                                  'question', NEW.pending_gate->>'question',
                                                  'expires_at', svc_webhook_time(NEW.gate_expires_at));
     ELSIF kind = 'run.completed' THEN
       info.data := info.data || jsonb_build_object('output', NEW.output,
                                                  'finished_at', svc_webhook_time(NEW.finished_at));
     ELSE
       info.data := info.data || jsonb_build_object('error_detail', NEW.error_detail,
                                                  'finished_at', svc_webhook_time(NEW.finished_at));
     END IF;
     PERFORM svc_webhook_enqueue(kind, info.project, info.data);
     RETURN NULL;
   END
   $fn$`,
  `CREATE OR REPLACE TRIGGER svc_runs_webhooks AFTER UPDATE OF status ON svc_runs
     FOR EACH ROW
     WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('waiting_approval', 'completed', 'error'))
     EXECUTE FUNCTION svc_webhook_run_status()`,
  // A decision recorded at a gate: a person's (gate.decided) or the clock's (gate.expired).
  `CREATE OR REPLACE FUNCTION svc_webhook_gate_decision() RETURNS trigger LANGUAGE plpgsql AS $fn$
   DECLARE
     info record;
   BEGIN
     IF NOT EXISTS (SELECT 1 FROM svc_webhooks) THEN
       RETURN NULL;
     END IF;
     SELECT * INTO info FROM svc_webhook_run_data(NEW.run_id);
     info.data := info.data || jsonb_build_object('gate', NEW.gate, 'decided_at', svc_webhook_time(NEW.decided_at));
     IF NEW.decision = 'expire' THEN
       PERFORM svc_webhook_enqueue('gate.expired', info.project,
                                   info.data || jsonb_build_object('outcome', NEW.outcome, 'route_to', NEW.route_to));
     ELSE
       PERFORM svc_webhook_enqueue('gate.decided', info.project, info.data || jsonb_build_object(
         'decision', NEW.decision,
         'decided_by', jsonb_build_object('id', NEW.decided_by, 'name', NEW.decided_by_name),
         'role', NEW.role, 'reason', NEW.reason, 'response', NEW.response, 'route_to', NEW.route_to,
         'edited', CASE WHEN jsonb_typeof(NEW.edits) = 'object'
                        THEN (SELECT COALESCE(jsonb_agg(k ORDER BY k), '[]'::jsonb) FROM jsonb_object_keys(NEW.edits) k)
                        ELSE '[]'::jsonb END));
     END IF;
     RETURN NULL;
   END
   $fn$`,
  `CREATE OR REPLACE TRIGGER svc_gate_decisions_webhooks AFTER INSERT ON svc_gate_decisions
     FOR EACH ROW EXECUTE FUNCTION svc_webhook_gate_decision()`,
  // An approval counts once per person and round of a stop at a gate: an edit opens a new round (docs/approvals.md).
  `ALTER TABLE svc_gate_decisions ADD COLUMN IF NOT EXISTS round integer NOT NULL DEFAULT 0`,
  `DROP INDEX IF EXISTS svc_gate_decisions_once`,
  `CREATE UNIQUE INDEX IF NOT EXISTS svc_gate_decisions_once_per_round
     ON svc_gate_decisions (run_id, wait_seq, round, decided_by)
     WHERE decided_by IS NOT NULL AND decision IN ('approve', 'edit')`,
  // The queue is fair between organisations first, then their projects (svc_llm_grant).
  `ALTER TABLE svc_llm_queue ADD COLUMN IF NOT EXISTS org text NOT NULL DEFAULT ''`,
  `ALTER TABLE svc_llm_queue ADD COLUMN IF NOT EXISTS key text`,
  `CREATE UNIQUE INDEX IF NOT EXISTS svc_llm_queue_by_key ON svc_llm_queue (key)`,
  `CREATE TABLE IF NOT EXISTS svc_llm_queue_orgs (
     org text PRIMARY KEY,
     last_granted_at timestamptz NOT NULL
   )`,
  // Whether a run goes to the local runtime, decided when it starts by the parser that routes models (model-ref.ts):
  // the per-user limit counts these, never a pattern of its own. Runs from before are judged once, by their prefix.
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS local_runtime boolean`,
  `UPDATE svc_runs SET local_runtime = (model IS NULL OR model !~ '^cloud_(a|b|c):') WHERE local_runtime IS NULL`,
  `CREATE INDEX IF NOT EXISTS svc_runs_local_by_user ON svc_runs (created_by) WHERE status = 'running' AND local_runtime`,
  // Fair claims (db/webhooks.repository.ts) read each webhook's next due rows, and the attempts in flight (rows
  // under a lease: a few), rather than every pending row: a slow tenant's backlog does not slow everyone's claims.
  `CREATE INDEX IF NOT EXISTS svc_webhook_deliveries_pending_by_webhook
     ON svc_webhook_deliveries (webhook_id, next_attempt_at, created_at) WHERE status = 'pending'`,
  `CREATE INDEX IF NOT EXISTS svc_webhook_deliveries_leased ON svc_webhook_deliveries (lease_until)
     WHERE status = 'pending' AND lease_until IS NOT NULL`,
  // Idempotency-Key: the first answer to a caller's key, replayed to a retry of the same request for 24 hours
  // (http/idempotency.ts). `status` is null while the first request is in flight; `body` is json, not jsonb, so the
  // answer comes back with its keys in the order they were sent.
  `CREATE TABLE IF NOT EXISTS svc_idempotency_keys (
     caller text NOT NULL,
     key text NOT NULL,
     fingerprint text NOT NULL,
     status integer,
     body json,
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (caller, key)
   )`,
  `CREATE INDEX IF NOT EXISTS svc_idempotency_keys_created ON svc_idempotency_keys (created_at)`,
  // The run engine (src-server/engine/): node rows are written whole under a key of their run (`<node>#<visit>`), so
  // a write tried again, or made again by a process that takes the run over, lands on the same row. Rows from before
  // get theirs once, numbered as their nodes were entered.
  `ALTER TABLE svc_run_nodes ADD COLUMN IF NOT EXISTS key text`,
  `UPDATE svc_run_nodes n SET key = k.key
     FROM (SELECT id, node_id || '#' || row_number() OVER (PARTITION BY run_id, node_id ORDER BY id) AS key
             FROM svc_run_nodes WHERE run_id IN (SELECT run_id FROM svc_run_nodes WHERE key IS NULL)) k
    WHERE n.id = k.id AND n.key IS NULL`,
  `CREATE UNIQUE INDEX IF NOT EXISTS svc_run_nodes_by_key ON svc_run_nodes (run_id, key)`,
  // The checkpoint a run paused at: the one a decision answers (a run that went on from it is not answered by it).
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS gate_checkpoint_id text`,
  // Decisions a run resumes with, from before they had one shape (contracts/runs.ts GateDecision): upgraded once.
  `UPDATE svc_runs SET resume_decision = jsonb_build_object(
       'decision', (resume_decision - 'approved' - 'by') || jsonb_build_object(
         'kind', COALESCE(resume_decision->>'kind',
                          CASE WHEN resume_decision->'approved' = 'true'::jsonb THEN 'approve' ELSE 'reject' END),
         'deciders', COALESCE(resume_decision->'by', '[]'::jsonb)),
       'checkpointId', NULL)
    WHERE resume_decision IS NOT NULL AND NOT resume_decision ? 'decision'`,
  // Gates paused before gates had options carry the ones they were decided under: the default ones.
  `UPDATE svc_runs SET pending_gate = jsonb_build_object('decide_role', 'member', 'approvals_needed', 1,
                                                         'on_expiry', NULL) || pending_gate
    WHERE pending_gate IS NOT NULL AND NOT pending_gate ? 'decide_role'`,
  // Tool calls (docs/tools.md): a decision on a tool call names the call and the arguments it approved, bound by hash.
  `ALTER TABLE svc_gate_decisions ADD COLUMN IF NOT EXISTS tool_call_id text`,
  `ALTER TABLE svc_gate_decisions ADD COLUMN IF NOT EXISTS arguments text`,
  `ALTER TABLE svc_gate_decisions ADD COLUMN IF NOT EXISTS arguments_sha256 text`,
  // A phase's model turns and tool calls, recorded before and after each happens under ids derived from the run, the
  // node, its visit, the turn and the place in the turn: a node that runs again (a resume, a takeover) replays them,
  // so no model call and no tool call is made twice. Each column is written once (first write wins).
  `CREATE TABLE IF NOT EXISTS svc_model_turns (
     id text PRIMARY KEY,
     run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
     text text NOT NULL,
     tool_calls jsonb NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX IF NOT EXISTS svc_model_turns_by_run ON svc_model_turns (run_id)`,
  `CREATE TABLE IF NOT EXISTS svc_tool_calls (
     id text PRIMARY KEY,
     run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
     node text NOT NULL,
     tool text NOT NULL,
     arguments text NOT NULL,
     arguments_sha256 text NOT NULL,
     policy text NOT NULL,
     rerunnable boolean NOT NULL,
     decision jsonb,
     attempts integer NOT NULL DEFAULT 0,
     started_at timestamptz,
     result text,
     is_error boolean,
     finished_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX IF NOT EXISTS svc_tool_calls_by_run ON svc_tool_calls (run_id)`,
  // "Allow this tool for the rest of this thread": a grant given with an approval, recorded, revocable.
  `CREATE TABLE IF NOT EXISTS svc_tool_grants (
     id bigserial PRIMARY KEY,
     thread_id uuid NOT NULL REFERENCES svc_threads(id) ON DELETE CASCADE,
     tool text NOT NULL,
     call_id text NOT NULL,
     granted_by text,
     granted_by_name text NOT NULL,
     granted_at timestamptz NOT NULL DEFAULT now(),
     revoked_by_name text,
     revoked_at timestamptz
   )`,
  `CREATE UNIQUE INDEX IF NOT EXISTS svc_tool_grants_active ON svc_tool_grants (thread_id, tool) WHERE revoked_at IS NULL`,
  // Models pulled into the local runtime (docs/models.md#pulling): the progress every process and studio reads, one
  // pull of a model at a time.
  `CREATE TABLE IF NOT EXISTS svc_model_pulls (
     id uuid PRIMARY KEY,
     model text NOT NULL,
     status text NOT NULL DEFAULT 'pulling',
     detail text NOT NULL DEFAULT '',
     total bigint NOT NULL DEFAULT 0,
     completed bigint NOT NULL DEFAULT 0,
     error text,
     cancel_requested boolean NOT NULL DEFAULT false,
     started_by text NOT NULL,
     started_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     finished_at timestamptz
   )`,
  `CREATE UNIQUE INDEX IF NOT EXISTS svc_model_pulls_one_at_a_time ON svc_model_pulls (model) WHERE status = 'pulling'`,
  // Settings of the instance changed from the studio rather than the environment: `default_model`.
  `CREATE TABLE IF NOT EXISTS svc_instance_settings (
     key text PRIMARY KEY,
     value text NOT NULL,
     updated_by text NOT NULL,
     updated_at timestamptz NOT NULL DEFAULT now()
   )`,
  // The MCP server's sessions (docs/mcp.md#sessions-on-any-process): kept here, not in a process, so that any process
  // behind a balancer continues one; bound to the person who began it.
  `CREATE TABLE IF NOT EXISTS svc_mcp_sessions (
     id text PRIMARY KEY,
     user_id uuid NOT NULL REFERENCES svc_users(id) ON DELETE CASCADE,
     protocol_version text NOT NULL,
     client_name text,
     client_version text,
     elicitation boolean NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     last_used_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX IF NOT EXISTS svc_mcp_sessions_by_use ON svc_mcp_sessions (last_used_at)`,
  // A question the MCP server asked inside a call (elicitation) at a gate or a tool call; its answer may reach any
  // process, which decides through the approvals service and marks the row for the call that waits on it.
  `CREATE TABLE IF NOT EXISTS svc_mcp_elicitations (
     id text PRIMARY KEY,
     session_id text NOT NULL REFERENCES svc_mcp_sessions(id) ON DELETE CASCADE,
     run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
     thread_id uuid NOT NULL,
     gate text NOT NULL,
     call_id text,
     context_node text,
     state text NOT NULL DEFAULT 'asked',
     outcome text,
     asked_at timestamptz NOT NULL DEFAULT now(),
     expires_at timestamptz NOT NULL,
     answered_at timestamptz
   )`,
  // Every thread belongs to a project: threads from before projects go to the default one, once (the check makes
  // the statement nothing at all once the column is NOT NULL, as every process runs init_db).
  `INSERT INTO svc_orgs (id, name) VALUES ('${DEFAULT_ORG_ID}', 'Default organisation') ON CONFLICT (id) DO NOTHING`,
  `INSERT INTO svc_teams (id, org_id, name) VALUES ('${DEFAULT_TEAM_ID}', '${DEFAULT_ORG_ID}', 'Default team')
     ON CONFLICT (id) DO NOTHING`,
  `INSERT INTO svc_projects (id, team_id, name) VALUES ('${DEFAULT_PROJECT_ID}', '${DEFAULT_TEAM_ID}', 'Default project')
     ON CONFLICT (id) DO NOTHING`,
  `DO $$ BEGIN
     IF EXISTS (SELECT 1 FROM pg_attribute
                 WHERE attrelid = 'svc_threads'::regclass AND attname = 'project_id' AND NOT attnotnull) THEN
       UPDATE svc_threads SET project_id = '${DEFAULT_PROJECT_ID}' WHERE project_id IS NULL;
       ALTER TABLE svc_threads ALTER COLUMN project_id SET NOT NULL;
     END IF;
   END $$`,
  // Personal access tokens (docs/security.md#personal-access-tokens): a person's lasting bearer for a script or an MCP
  // client. Only the token's SHA-256 is kept (the token is shown once); `prefix` is its first characters, to tell
  // tokens apart in a list. A revoked token keeps its row, with when it was revoked and last used.
  `CREATE TABLE IF NOT EXISTS svc_personal_tokens (
     id uuid PRIMARY KEY,
     user_id uuid NOT NULL REFERENCES svc_users(id) ON DELETE CASCADE,
     name text NOT NULL,
     token_sha256 text NOT NULL UNIQUE,
     prefix text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     last_used_at timestamptz,
     revoked_at timestamptz
   )`,
  `CREATE INDEX IF NOT EXISTS svc_personal_tokens_live_by_user ON svc_personal_tokens (user_id, created_at DESC)
     WHERE revoked_at IS NULL`,
  // A second message to a busy thread (docs/run-lifecycle.md#a-second-message-to-a-busy-thread). A queued run waits
  // in its thread's line, in the order its request was accepted (`queued_at`, taken under the thread's lock).
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS queued_at timestamptz`,
  // A run's trace (docs/observability.md#traces): its W3C traceparent, which every leg and every wait continues.
  `ALTER TABLE svc_runs ADD COLUMN IF NOT EXISTS trace_context text`,
  `CREATE INDEX IF NOT EXISTS svc_runs_queued_by_thread ON svc_runs (thread_id, queued_at) WHERE status = 'queued'`,
  // A cancel, with its run_cancelled stored after every id the executing process may hand out, and announced: one
  // statement for a cancel request and for the runs a later request interrupts.
  `CREATE OR REPLACE FUNCTION svc_cancel_run(p_run uuid, p_reason text) RETURNS boolean LANGUAGE plpgsql AS $fn$
   DECLARE
     c record;
   BEGIN
     UPDATE svc_runs SET status = 'cancelled', finished_at = now(), pending_gate = NULL, owner_id = NULL,
            lease_until = NULL, resume_decision = NULL, end_reason = COALESCE(p_reason, end_reason),
            event_seq = GREATEST(seq_reserved, event_seq) + 1
      WHERE id = p_run AND status IN ('queued', 'running', 'waiting_approval')
      RETURNING id, event_seq, end_reason INTO c;
     IF NOT FOUND THEN
       RETURN false;
     END IF;
     UPDATE svc_run_nodes SET status = 'cancelled', exited_at = extract(epoch FROM now())
      WHERE exited_at IS NULL AND run_id = p_run;
     INSERT INTO svc_run_events (run_id, seq, type, data)
     VALUES (p_run, c.event_seq, 'run_cancelled',
             json_build_object('type', 'run_cancelled', 'run_id', p_run, 'reason', c.end_reason)::text);
     PERFORM pg_notify('${CANCEL_CHANNEL}', p_run::text);
     PERFORM pg_notify('${RUN_EVENTS_CHANNEL}', p_run::text || ':' || c.event_seq);
     RETURN true;
   END
   $fn$`,
  // A run that ends (or a queued one cancelled) with runs queued behind it in its thread: every process hears that
  // the thread's line may move, and one of them starts the next run (runs.repository.ts claimQueued).
  `CREATE OR REPLACE FUNCTION svc_run_ready() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     IF EXISTS (SELECT 1 FROM svc_runs WHERE thread_id = NEW.thread_id AND status = 'queued') THEN
       PERFORM pg_notify('${RUN_READY_CHANNEL}', NEW.thread_id::text);
     END IF;
     RETURN NULL;
   END
   $fn$`,
  `CREATE OR REPLACE TRIGGER svc_runs_ready AFTER UPDATE OF status ON svc_runs
     FOR EACH ROW
     WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('completed', 'rejected', 'error', 'cancelled'))
     EXECUTE FUNCTION svc_run_ready()`,
  // The form of svc_start_run without a strategy, from databases of older versions.
  `DROP FUNCTION IF EXISTS svc_start_run(uuid, uuid, boolean, uuid, text, text, text, text, uuid, text,
     double precision, integer, jsonb, boolean, integer)`,
  // A run's row, and its thread's for a new thread, written in one round trip and one transaction, with the two rules
  // that must hold across processes: a thread has one active run (its row is locked for the check), and a user has at
  // most p_local_cap runs going on the local runtime (a lock per user serialises the count and the insert, so a burst
  // of starts spread over processes cannot all pass a count taken before any of them was written). p_strategy is what
  // a request does when the thread is busy: 'reject' answers which run is active or queued; 'enqueue' writes the run
  // as queued, behind the others; 'interrupt' cancels the queued runs and the active one first. ('rollback' is
  // runs.repository.ts's: it removes the active run, then calls this.)
  `CREATE OR REPLACE FUNCTION svc_start_run(
     p_run uuid, p_thread uuid, p_new_thread boolean, p_project uuid, p_agent text, p_model text, p_message text,
     p_project_path text, p_user uuid, p_owner text, p_lease_s double precision, p_seq_reserved integer,
     p_forked_from jsonb, p_local boolean, p_local_cap integer, p_strategy text, p_trace_context text)
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
       INSERT INTO svc_threads (id, agent, model, last_message, project_path, project_id, created_by)
       VALUES (p_thread, p_agent, p_model, p_message, p_project_path, p_project, p_user);
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
                                 seq_reserved, event_seq, forked_from, local_runtime, queued_at, trace_context)
           VALUES (p_run, p_thread, p_agent, p_model, 'queued', p_message, p_project_path, p_user, 1, 1,
                   p_forked_from, p_local, clock_timestamp(), p_trace_context);
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
                           lease_until, seq_reserved, forked_from, local_runtime, trace_context)
     VALUES (p_run, p_thread, p_agent, p_model, 'running', p_message, p_project_path, p_user, p_owner,
             now() + make_interval(secs => p_lease_s), p_seq_reserved, p_forked_from, p_local, p_trace_context);
     RETURN QUERY SELECT 'started'::text, NULL::uuid, NULL::text, NULL::integer;
   END
   $fn$`,
  // Retention (docs/retention.md): what a project's owners chose; a project without a row keeps everything.
  `CREATE TABLE IF NOT EXISTS svc_project_retention (
     project_id uuid PRIMARY KEY REFERENCES svc_projects(id) ON DELETE CASCADE,
     keep_finished_threads_days integer CHECK (keep_finished_threads_days >= 1),
     prune_checkpoints boolean NOT NULL DEFAULT false,
     updated_by text NOT NULL,
     updated_at timestamptz NOT NULL DEFAULT now()
   )`,
  // When the janitor last pruned a thread's checkpoints: a thread is pruned again only after a run ended since.
  `ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS checkpoints_pruned_at timestamptz`,
  // One row per periodic job of the cluster: the process that claims a pass writes when it started, so that the
  // other processes, whose timers fire at other moments, leave that interval's pass to it.
  `CREATE TABLE IF NOT EXISTS svc_janitor_passes (
     job text PRIMARY KEY,
     started_at timestamptz NOT NULL,
     started_by text NOT NULL,
     finished_at timestamptz
   )`,
  // Schedules (docs/schedules.md): an agent run at the times of a cron expression, as the person who made it. The
  // maker has no foreign key: a schedule outlives a deleted user, so that it can pause and say why.
  `CREATE TABLE IF NOT EXISTS svc_schedules (
     id uuid PRIMARY KEY,
     project_id uuid NOT NULL REFERENCES svc_projects(id) ON DELETE CASCADE,
     created_by uuid NOT NULL,
     created_by_name text NOT NULL,
     agent text NOT NULL,
     cron text NOT NULL,
     timezone text NOT NULL,
     message text NOT NULL,
     model text,
     project_path text,
     thread_id uuid,
     catch_up text NOT NULL DEFAULT 'one' CHECK (catch_up IN ('one', 'none')),
     paused_at timestamptz,
     paused_reason text,
     next_fire_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX IF NOT EXISTS svc_schedules_due ON svc_schedules (next_fire_at) WHERE paused_at IS NULL`,
  `CREATE INDEX IF NOT EXISTS svc_schedules_by_project ON svc_schedules (project_id, created_at)`,
  // One row per schedule and occurrence: the process whose insert makes it is the one that fires it, whichever of the
  // cluster's processes saw the occurrence come due. `process` is that process's owner id (as svc_runs.owner_id).
  `CREATE TABLE IF NOT EXISTS svc_schedule_fires (
     schedule_id uuid NOT NULL REFERENCES svc_schedules(id) ON DELETE CASCADE,
     occurrence timestamptz NOT NULL,
     kind text NOT NULL CHECK (kind IN ('scheduled', 'catch_up', 'manual')),
     outcome text NOT NULL CHECK (outcome IN ('starting', 'started', 'refused', 'paused', 'skipped')),
     reason text,
     run_id uuid,
     thread_id uuid,
     fired_by text,
     process text NOT NULL,
     fired_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (schedule_id, occurrence)
   )`,
  `CREATE INDEX IF NOT EXISTS svc_schedule_fires_recent ON svc_schedule_fires (schedule_id, fired_at DESC)`,
  // A fire's start is leased to the process that claimed it: one still `starting` when its lease lapses (its process
  // stopped) is taken over by another. `run_key` is the id its run gets, so that a second start of the same fire fails
  // on svc_runs' primary key instead of making a second run.
  `ALTER TABLE svc_schedule_fires ADD COLUMN IF NOT EXISTS run_key uuid`,
  `ALTER TABLE svc_schedule_fires ADD COLUMN IF NOT EXISTS lease_until timestamptz`,
  `CREATE INDEX IF NOT EXISTS svc_schedule_fires_starting ON svc_schedule_fires (lease_until) WHERE outcome = 'starting'`,
  // The schedules one person runs, counted against SCHEDULES_MAX_PER_USER.
  `CREATE INDEX IF NOT EXISTS svc_schedules_by_maker ON svc_schedules (created_by)`,
  // The usage accounting (docs/observability.md#accounting): one row per model call, priced when it was made. Its
  // project, user and agent are copied from its run, so the totals read one table; a replayed turn is no call.
  `CREATE TABLE IF NOT EXISTS svc_model_calls (
     id uuid PRIMARY KEY,
     run_id uuid NOT NULL REFERENCES svc_runs(id) ON DELETE CASCADE,
     node_id text NOT NULL,
     project_id uuid NOT NULL,
     user_id uuid,
     agent text NOT NULL,
     provider text NOT NULL,
     model text NOT NULL,
     input_tokens integer,
     output_tokens integer,
     duration_ms double precision NOT NULL,
     load_ms double precision,
     generation_ms double precision,
     queue_wait_ms double precision,
     input_per_mtok numeric,
     output_per_mtok numeric,
     cost_usd numeric,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX IF NOT EXISTS svc_model_calls_by_project ON svc_model_calls (project_id, created_at)`,
  `CREATE INDEX IF NOT EXISTS svc_model_calls_by_user ON svc_model_calls (user_id, created_at)`,
  `CREATE INDEX IF NOT EXISTS svc_model_calls_by_run ON svc_model_calls (run_id)`,
  // A thread's name: what it was first asked (whitespace folded, cut at a word near 80 characters), or what a person
  // renamed it to (PATCH /threads/{id}). A trigger names a thread the first time it gets a message, whichever path
  // writes it (a new thread's run, the first run of an empty thread, a queued run claimed), and never renames it:
  // later runs change last_message only.
  `ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS name text`,
  `CREATE OR REPLACE FUNCTION svc_thread_name(p_message text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
   DECLARE
     m text := btrim(regexp_replace(p_message, '\\s+', ' ', 'g'));
     cut text;
   BEGIN
     IF m = '' THEN RETURN NULL; END IF;
     IF length(m) <= 80 THEN RETURN m; END IF;
     cut := substring(left(m, 80) FROM '^(.*\\S)\\s');
     IF length(cut) >= 40 THEN RETURN cut || '…'; END IF;
     RETURN left(m, 79) || '…';
   END
   $fn$`,
  `CREATE OR REPLACE FUNCTION svc_thread_named() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     IF NEW.name IS NULL AND NEW.last_message IS NOT NULL THEN
       NEW.name := svc_thread_name(NEW.last_message);
     END IF;
     RETURN NEW;
   END
   $fn$`,
  `CREATE OR REPLACE TRIGGER svc_threads_named BEFORE INSERT OR UPDATE OF last_message ON svc_threads
     FOR EACH ROW EXECUTE FUNCTION svc_thread_named()`,
  // Threads from before names: named after their first run's message.
  `UPDATE svc_threads t
      SET name = svc_thread_name(COALESCE((SELECT r.message FROM svc_runs r WHERE r.thread_id = t.id
                                             AND r.message IS NOT NULL ORDER BY r.started_at LIMIT 1), t.last_message))
    WHERE t.name IS NULL AND t.last_message IS NOT NULL`,
  // A call that finds a slot free with nobody waiting takes it in the same step, and nobody is told: the queue's
  // notice then always means that someone waits, which is what a process keeping a slot for a run's next call
  // listens for (models/local-queue.ts). Otherwise as before: the ticket joins the line and svc_llm_grant serves it.
  `CREATE OR REPLACE FUNCTION svc_llm_enqueue(p_key text, p_owner text, p_tenant text, p_label text,
                                              p_lease_s double precision, p_slots integer)
   RETURNS TABLE (ticket bigint, granted boolean) LANGUAGE plpgsql AS $fn$
   DECLARE
     t bigint;
     v_granted boolean;
     v_org text;
   BEGIN
     PERFORM set_config('synchronous_commit', 'off', true);
     PERFORM pg_advisory_xact_lock(7305113);
     SELECT q.ticket, q.granted_at IS NOT NULL INTO t, v_granted FROM svc_llm_queue q WHERE q.key = p_key;
     IF FOUND THEN
       RETURN QUERY SELECT t, v_granted;
       RETURN;
     END IF;
     -- A ticket's organisation is its project's (the tenant is a project id); a call outside any project is its own.
     v_org := COALESCE((SELECT tm.org_id::text FROM svc_projects p JOIN svc_teams tm ON tm.id = p.team_id
                         WHERE p.id::text = p_tenant), p_tenant);
     DELETE FROM svc_llm_queue WHERE lease_until < now();
     IF NOT EXISTS (SELECT 1 FROM svc_llm_queue q WHERE q.granted_at IS NULL)
        AND (SELECT count(*) FROM svc_llm_queue q WHERE q.granted_at IS NOT NULL) < p_slots THEN
       INSERT INTO svc_llm_queue (key, owner_id, tenant, org, label, lease_until, granted_at)
       VALUES (p_key, p_owner, p_tenant, v_org, p_label, now() + make_interval(secs => p_lease_s), now())
       RETURNING svc_llm_queue.ticket INTO t;
       INSERT INTO svc_llm_queue_tenants (tenant, last_granted_at) VALUES (p_tenant, clock_timestamp())
       ON CONFLICT (tenant) DO UPDATE SET last_granted_at = excluded.last_granted_at;
       INSERT INTO svc_llm_queue_orgs (org, last_granted_at) VALUES (v_org, clock_timestamp())
       ON CONFLICT (org) DO UPDATE SET last_granted_at = excluded.last_granted_at;
       RETURN QUERY SELECT t, true;
       RETURN;
     END IF;
     INSERT INTO svc_llm_queue (key, owner_id, tenant, org, label, lease_until)
     VALUES (p_key, p_owner, p_tenant, v_org, p_label, now() + make_interval(secs => p_lease_s))
     RETURNING svc_llm_queue.ticket INTO t;
     PERFORM svc_llm_grant(p_slots);
     RETURN QUERY SELECT t, EXISTS (SELECT 1 FROM svc_llm_queue q WHERE q.ticket = t AND q.granted_at IS NOT NULL);
   END
   $fn$`,
  // A ticket leaves after serving p_calls calls (a slot kept for a run's next call serves several), p_served_s
  // seconds in all.
  `CREATE OR REPLACE FUNCTION svc_llm_leave(p_ticket bigint, p_slots integer, p_served_s double precision,
                                            p_timed_out boolean, p_calls integer)
   RETURNS TABLE (waiting integer, active integer) LANGUAGE plpgsql AS $fn$
   DECLARE
     n integer := least(greatest(p_calls, 1), 20);
   BEGIN
     PERFORM set_config('synchronous_commit', 'off', true);
     PERFORM pg_advisory_xact_lock(7305113);
     DELETE FROM svc_llm_queue WHERE ticket = p_ticket;
     IF FOUND AND p_served_s IS NOT NULL THEN
       UPDATE svc_llm_queue_stats
          SET served = served + greatest(p_calls, 1),
              recent_s = (recent_s || array_fill(p_served_s / greatest(p_calls, 1), ARRAY[n]))
                           [greatest(cardinality(recent_s) + n - 19, 1):]
        WHERE id = 1;
     ELSIF FOUND AND p_timed_out THEN
       UPDATE svc_llm_queue_stats SET timed_out = timed_out + 1 WHERE id = 1;
     END IF;
     RETURN QUERY SELECT (count(*) FILTER (WHERE granted_at IS NULL))::integer,
                         (count(*) FILTER (WHERE granted_at IS NOT NULL))::integer
                    FROM svc_llm_queue;
     PERFORM svc_llm_grant(p_slots);
   END
   $fn$`,
  // The four-argument form, which versions before 05ef644 called: no version that may share the database now does.
  `DROP FUNCTION IF EXISTS svc_llm_leave(bigint, integer, double precision, boolean)`,
  // The LangGraph API under /lg (docs/langgraph-api.md): a thread's metadata, which its clients search by; a thread
  // created there before its first run (which names its agent) waits in svc_lg_drafts, then moves to svc_threads
  // under the same id; and what a run was asked to stream, for a join that names no modes.
  `ALTER TABLE svc_threads ADD COLUMN IF NOT EXISTS metadata jsonb NOT NULL DEFAULT '{}'`,
  `CREATE TABLE IF NOT EXISTS svc_lg_drafts (
     id uuid PRIMARY KEY,
     project_id uuid NOT NULL REFERENCES svc_projects(id) ON DELETE CASCADE,
     created_by uuid,
     metadata jsonb NOT NULL DEFAULT '{}',
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX IF NOT EXISTS svc_lg_drafts_by_project ON svc_lg_drafts (project_id, updated_at)`,
  `CREATE TABLE IF NOT EXISTS svc_lg_runs (
     run_id uuid PRIMARY KEY REFERENCES svc_runs(id) ON DELETE CASCADE,
     stream_mode jsonb NOT NULL,
     metadata jsonb NOT NULL DEFAULT '{}'
   )`,
  // The folders under PROJECT_ROOTS that belong to an organisation (docs/security.md#project-paths): one
  // organisation per folder, and no folder inside another's (checked under a lock when one is registered).
  `CREATE TABLE IF NOT EXISTS svc_org_folders (
     id uuid PRIMARY KEY,
     org_id uuid NOT NULL REFERENCES svc_orgs(id) ON DELETE CASCADE,
     path text NOT NULL UNIQUE,
     created_by_name text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
];
