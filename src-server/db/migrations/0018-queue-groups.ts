import type { Migration } from './migration';

/**
 * The local runtime's queue takes a group of joins, or of leaves, in one call of a function (llm-queue.repository.ts),
 * and does its bookkeeping once per group rather than once per call.
 *
 * A call of svc_llm_enqueue or svc_llm_leave reads the whole queue under its lock: the lapsed tickets, the slots held,
 * whether anyone waits. With a thousand runs streaming, the queue holds a thousand tickets, and a group of a hundred
 * joins read them a hundred times: 15–40 ms under the lock per group, a quarter of a second for a thousand runs' first
 * calls, with every later join waiting behind it (docs/performance.md#the-queues-bookkeeping-2026-12-07).
 *
 * - svc_llm_enqueue_many: the joins of a group in their order, each as svc_llm_enqueue serves one (a key asked for
 *   again answers its ticket; a slot at once while nobody waits and one is free; otherwise in line, and
 *   svc_llm_grant), with the lapsed tickets dropped and the slots counted once, then kept up to date as the group goes.
 * - svc_llm_leave_many: the leaves of a group in their order, each as svc_llm_leave serves one, each answering the
 *   queue as it left it; then one svc_llm_grant for the group.
 * - Indexes on the lease and on the tickets in line: finding lapsed tickets, and whether anyone waits, no longer reads
 *   every ticket. A join finds its project's organisation by the project's key: svc_llm_enqueue compares every
 *   project's id as text, 1.5 ms a join under the lock with 10,000 projects.
 *
 * The single forms stay, for the release before, which joins and leaves beside this one during an upgrade; both take
 * the same lock, so the queue serves their calls in one order.
 */
export const queueGroups: Migration = {
  name: '0018_queue_groups',
  // New functions and indexes: the release before neither calls nor minds them.
  compatible: true,
  async up(client) {
    await client.query(`CREATE INDEX IF NOT EXISTS svc_llm_queue_by_lease ON svc_llm_queue (lease_until)`);
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_llm_queue_in_line ON svc_llm_queue (ticket) WHERE granted_at IS NULL`,
    );
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_llm_enqueue_many(p_keys text[], p_owners text[], p_tenants text[],
                                                       p_labels text[], p_lease_s double precision[],
                                                       p_slots integer[])
       RETURNS TABLE (n integer, ticket bigint, granted boolean) LANGUAGE plpgsql AS $fn$
       DECLARE
         t bigint;
         v_granted boolean;
         v_org text;
         v_active integer;
         v_waiting boolean;
       BEGIN
         PERFORM set_config('synchronous_commit', 'off', true);
         PERFORM pg_advisory_xact_lock(7305113);
         DELETE FROM svc_llm_queue WHERE lease_until < now();
         -- Only this transaction changes the queue while it holds the lock: the counts stay true as the group goes.
         SELECT count(*) INTO v_active FROM svc_llm_queue q WHERE q.granted_at IS NOT NULL;
         v_waiting := EXISTS (SELECT 1 FROM svc_llm_queue q WHERE q.granted_at IS NULL);
         FOR i IN 1..COALESCE(cardinality(p_keys), 0) LOOP
           n := i;
           SELECT q.ticket, q.granted_at IS NOT NULL INTO t, v_granted FROM svc_llm_queue q WHERE q.key = p_keys[i];
           IF FOUND THEN
             ticket := t;
             granted := v_granted;
             RETURN NEXT;
             CONTINUE;
           END IF;
           -- A ticket's organisation is its project's (the tenant is a project id); a call outside any project is its
           -- own. Found by the project's key, not by its id as text, which read every project.
           v_org := COALESCE((SELECT tm.org_id::text FROM svc_projects p JOIN svc_teams tm ON tm.id = p.team_id
                               WHERE p.id = CASE WHEN p_tenants[i] ~* '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$'
                                                 THEN p_tenants[i]::uuid END), p_tenants[i]);
           IF NOT v_waiting AND v_active < p_slots[i] THEN
             INSERT INTO svc_llm_queue (key, owner_id, tenant, org, label, lease_until, granted_at)
             VALUES (p_keys[i], p_owners[i], p_tenants[i], v_org, p_labels[i],
                     now() + make_interval(secs => p_lease_s[i]), now())
             RETURNING svc_llm_queue.ticket INTO t;
             INSERT INTO svc_llm_queue_tenants (tenant, last_granted_at) VALUES (p_tenants[i], clock_timestamp())
             ON CONFLICT (tenant) DO UPDATE SET last_granted_at = excluded.last_granted_at;
             INSERT INTO svc_llm_queue_orgs (org, last_granted_at) VALUES (v_org, clock_timestamp())
             ON CONFLICT (org) DO UPDATE SET last_granted_at = excluded.last_granted_at;
             v_active := v_active + 1;
             ticket := t;
             granted := true;
             RETURN NEXT;
             CONTINUE;
           END IF;
           INSERT INTO svc_llm_queue (key, owner_id, tenant, org, label, lease_until)
           VALUES (p_keys[i], p_owners[i], p_tenants[i], v_org, p_labels[i],
                   now() + make_interval(secs => p_lease_s[i]))
           RETURNING svc_llm_queue.ticket INTO t;
           PERFORM svc_llm_grant(p_slots[i]);
           ticket := t;
           granted := EXISTS (SELECT 1 FROM svc_llm_queue q WHERE q.ticket = t AND q.granted_at IS NOT NULL);
           RETURN NEXT;
           SELECT count(*) INTO v_active FROM svc_llm_queue q WHERE q.granted_at IS NOT NULL;
           v_waiting := EXISTS (SELECT 1 FROM svc_llm_queue q WHERE q.granted_at IS NULL);
         END LOOP;
       END
       $fn$`,
    );
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_llm_leave_many(p_tickets bigint[], p_slots integer,
                                                     p_served_s double precision[], p_timed_out boolean[],
                                                     p_calls integer[])
       RETURNS TABLE (n integer, waiting integer, active integer) LANGUAGE plpgsql AS $fn$
       DECLARE
         v_waiting integer;
         v_active integer;
         v_held boolean;
         k integer;
       BEGIN
         PERFORM set_config('synchronous_commit', 'off', true);
         PERFORM pg_advisory_xact_lock(7305113);
         SELECT count(*) FILTER (WHERE q.granted_at IS NULL), count(*) FILTER (WHERE q.granted_at IS NOT NULL)
           INTO v_waiting, v_active FROM svc_llm_queue q;
         FOR i IN 1..COALESCE(cardinality(p_tickets), 0) LOOP
           n := i;
           DELETE FROM svc_llm_queue q WHERE q.ticket = p_tickets[i] RETURNING q.granted_at IS NOT NULL INTO v_held;
           IF FOUND THEN
             IF v_held THEN
               v_active := v_active - 1;
             ELSE
               v_waiting := v_waiting - 1;
             END IF;
             -- A ticket's p_calls calls (a slot kept for a run's next call serves several), p_served_s seconds in all.
             IF p_served_s[i] IS NOT NULL THEN
               k := least(greatest(p_calls[i], 1), 20);
               UPDATE svc_llm_queue_stats
                  SET served = served + greatest(p_calls[i], 1),
                      recent_s = (recent_s || array_fill(p_served_s[i] / greatest(p_calls[i], 1), ARRAY[k]))
                                   [greatest(cardinality(recent_s) + k - 19, 1):]
                WHERE id = 1;
             ELSIF p_timed_out[i] THEN
               UPDATE svc_llm_queue_stats SET timed_out = timed_out + 1 WHERE id = 1;
             END IF;
           END IF;
           waiting := v_waiting;
           active := v_active;
           RETURN NEXT;
         END LOOP;
         PERFORM svc_llm_grant(p_slots);
       END
       $fn$`,
    );
  },
};
