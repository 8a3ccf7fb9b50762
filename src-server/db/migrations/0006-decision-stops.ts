import type { Migration } from './migration';

/**
 * One name for a stop in every door (contracts/stops.ts): the webhooks of a stop carry it, so that a receiver decides a
 * tool call's stop as it decides a gate's; and a question asked through MCP remembers the stop and the round it showed,
 * so that its answer decides what its person read.
 */
export const decisionStops: Migration = {
  name: '0006_decision_stops',
  // Two nullable columns and new forms of the webhook functions: the release before writes and reads on as it did.
  compatible: true,
  async up(client) {
    await client.query(`ALTER TABLE svc_mcp_elicitations ADD COLUMN IF NOT EXISTS stop_id text`);
    await client.query(`ALTER TABLE svc_mcp_elicitations ADD COLUMN IF NOT EXISTS round integer`);
    // The stop as the API shows it (StopSchema): `p_round` as people name it, from 1.
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_webhook_stop(p_run uuid, p_seq bigint, p_round integer, p_gate jsonb,
                                                   p_call_id text)
       RETURNS jsonb LANGUAGE sql IMMUTABLE AS $fn$
         SELECT jsonb_build_object(
                  'kind', CASE WHEN call.id IS NULL THEN 'gate' ELSE 'tool_call' END,
                  'id', p_run::text || ':' || p_seq::text,
                  'round', p_round,
                  'node', p_gate->>'node',
                  'tool_call', CASE WHEN call.id IS NULL THEN 'null'::jsonb
                                    ELSE jsonb_build_object('id', call.id,
                                                            'tool', p_gate->'tool_call'->>'tool',
                                                            'arguments_sha256', p_gate->'tool_call'->>'arguments_sha256')
                               END)
           FROM (SELECT COALESCE(p_call_id, p_gate->'tool_call'->>'call_id') AS id) call
       $fn$`,
    );
    await client.query(
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
                                                      'expires_at', svc_webhook_time(NEW.gate_expires_at),
                                                      'stop', svc_webhook_stop(NEW.id, NEW.event_seq, 1,
                                                                               NEW.pending_gate, NULL));
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
    );
    // A decision's stop: its round is the one after the decision (an edit opened it; an expiry's record says none), as
    // the next decider would name it.
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_webhook_gate_decision() RETURNS trigger LANGUAGE plpgsql AS $fn$
       DECLARE
         info record;
         stop jsonb;
       BEGIN
         IF NOT EXISTS (SELECT 1 FROM svc_webhooks) THEN
           RETURN NULL;
         END IF;
         SELECT * INTO info FROM svc_webhook_run_data(NEW.run_id);
         SELECT svc_webhook_stop(NEW.run_id, NEW.wait_seq,
                                 (SELECT COALESCE(max(d.round), 0) + 1 FROM svc_gate_decisions d
                                   WHERE d.run_id = NEW.run_id AND d.wait_seq = NEW.wait_seq),
                                 -- An edit of a call's arguments is shown after this row is written: its hash.
                                 CASE WHEN NEW.decision = 'edit' AND NEW.arguments_sha256 IS NOT NULL
                                           AND r.pending_gate ? 'tool_call'
                                      THEN jsonb_set(r.pending_gate, '{tool_call,arguments_sha256}',
                                                     to_jsonb(NEW.arguments_sha256))
                                      ELSE COALESCE(r.pending_gate, jsonb_build_object('node', NEW.gate)) END,
                                 NEW.tool_call_id)
           INTO stop FROM svc_runs r WHERE r.id = NEW.run_id;
         info.data := info.data || jsonb_build_object('gate', NEW.gate, 'decided_at', svc_webhook_time(NEW.decided_at),
                                                    'stop', stop);
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
    );
  },
};
