import type pg from 'pg';
import { withTransaction, type Pool } from './pool';
import { whileUnavailable } from './retry';
import { StatementGroups } from './statement-groups';
import { prepared } from './prepared';

/**
 * Joins (and leaves) of the queue under way at once from one process, each statement taking up to QUEUE_GROUP of
 * them. Every one takes the queue's lock, so more at once would not go faster: they would hold the pool's connections
 * while they wait for the lock, and a run's other statements would wait for those.
 */
const QUEUE_STATEMENTS = 2;
const QUEUE_GROUP = 100;

interface Joining {
  key: string;
  owner: string;
  tenant: string;
  label: string;
  leaseS: number;
  slots: number;
}

interface Leaving {
  ticket: number;
  slots: number;
  servedS: number | null;
  timedOut: boolean;
  calls: number;
}

/** The queue's transaction-scoped advisory lock: the one its SQL functions take (svc_llm_grant, … in migrations/). */
const QUEUE_LOCK = 7_305_113;

/**
 * Runs `work` holding the queue's lock, as the SQL functions do: the lock first, then the rows, in every change of
 * the queue. A change that took rows first (a renewal updating this process's tickets) could wait on a grant that
 * waits on it: PostgreSQL then ends one of them as a deadlock, and a slot given back by the one it ended was lost.
 */
function underQueueLock<T>(pool: Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [QUEUE_LOCK]);
    return work(client);
  });
}

/** Where a waiting ticket stands in the cluster's queue. */
export interface TicketState {
  ticket: number;
  granted: boolean;
  /** 1 = next in line; null once granted. */
  position: number | null;
  waiting: number;
  active: number;
  /** How long each call holding a slot has held it, in seconds. */
  held_s: number[];
  /** The average time the last calls held a slot; null before any finished. */
  average_s: number | null;
}

export interface QueueCounts {
  active: number;
  waiting: number;
  served: number;
  timed_out: number;
  /** Durations of the last calls that held a slot, oldest first. */
  recent_s: number[];
}

/**
 * The local-runtime queue in PostgreSQL (svc_llm_queue), shared by every server process on the database.
 * A ticket per model call; a granted ticket holds a slot. The SQL functions of the migrations grant slots in
 * one serialised step (round robin across tenants, first come first served within one) and announce on the
 * queue's NOTIFY channel every change made while someone waits (and only those).
 */
/** `waitS`: how long joining or leaving the queue waits for the database to come back (DATABASE_WAIT_S). */
export function llmQueueRepository(pool: Pool, waitS: number) {
  const waitMs = waitS * 1000;
  // A group's joins in one call of the queue's function, which serves them in order as it would one by one.
  const joins = new StatementGroups<Joining, { ticket: number; granted: boolean }>(
    async (calls) => {
      const { rows } = await whileUnavailable(
        'joining the local-runtime queue',
        () =>
          pool.query<{ ticket: string; granted: boolean }>(
            prepared(`SELECT e.ticket, e.granted
               FROM svc_llm_enqueue_many($1::text[], $2::text[], $3::text[], $4::text[], $5::double precision[],
                                         $6::integer[]) AS e
              ORDER BY e.n`),
            [
              calls.map((c) => c.key),
              calls.map((c) => c.owner),
              calls.map((c) => c.tenant),
              calls.map((c) => c.label),
              calls.map((c) => c.leaseS),
              calls.map((c) => c.slots),
            ],
          ),
        waitMs,
      );
      return rows.map((row) => ({ ticket: Number(row.ticket), granted: row.granted }));
    },
    QUEUE_STATEMENTS,
    QUEUE_GROUP,
  );
  const leaves = new StatementGroups<Leaving, { waiting: number; active: number }>(
    async (calls) => {
      const { rows } = await whileUnavailable(
        'leaving the local-runtime queue',
        () =>
          pool.query<{ waiting: number; active: number }>(
            prepared(`SELECT l.waiting, l.active
               FROM svc_llm_leave_many($1::bigint[], $2::integer, $3::double precision[], $4::boolean[],
                                       $5::integer[]) AS l
              ORDER BY l.n`),
            [
              calls.map((c) => c.ticket),
              // A process gives its one number of slots with every call: the group's grant uses it.
              Math.max(...calls.map((c) => c.slots)),
              calls.map((c) => c.servedS),
              calls.map((c) => c.timedOut),
              calls.map((c) => c.calls),
            ],
          ),
        waitMs,
      );
      return rows;
    },
    QUEUE_STATEMENTS,
    QUEUE_GROUP,
  );
  return {
    /**
     * A call joins the queue, once under its `key` however often it asks (a retry after a lost answer). Calls that ask
     * while others join go in one statement together.
     */
    enqueue(call: Joining): Promise<{ ticket: number; granted: boolean }> {
      return joins.add(call);
    },

    /** The state of some tickets (those of one process's waiters); a ticket no longer queued is absent. */
    async states(tickets: readonly number[]): Promise<TicketState[]> {
      const { rows } = await pool.query<TicketState>(
        `WITH by_project AS (
           SELECT q.ticket, q.tenant, q.org, row_number() OVER (PARTITION BY q.tenant ORDER BY q.ticket) AS project_turn
             FROM svc_llm_queue q WHERE q.granted_at IS NULL
         ), by_org AS (
           -- Within an organisation: each project's first, the project served longest ago first, then each one's
           -- second, and so on.
           SELECT p.ticket, p.org,
                  row_number() OVER (PARTITION BY p.org ORDER BY p.project_turn, t.last_granted_at NULLS FIRST, p.ticket)
                    AS org_turn
             FROM by_project p LEFT JOIN svc_llm_queue_tenants t ON t.tenant = p.tenant
         ), waiting AS (
           -- The order svc_llm_grant serves them in: each organisation's first, the one served longest ago first,
           -- then each one's second, and so on.
           SELECT b.ticket, row_number() OVER (ORDER BY b.org_turn, o.last_granted_at NULLS FIRST, b.ticket) AS position
             FROM by_org b LEFT JOIN svc_llm_queue_orgs o ON o.org = b.org
         ), counts AS (
           SELECT count(*) FILTER (WHERE granted_at IS NULL) AS waiting,
                  count(*) FILTER (WHERE granted_at IS NOT NULL) AS active,
                  COALESCE(array_agg(extract(epoch FROM now() - granted_at)::double precision)
                             FILTER (WHERE granted_at IS NOT NULL), '{}') AS held_s,
                  (SELECT avg(s) FROM svc_llm_queue_stats, unnest(recent_s) AS s WHERE id = 1) AS average_s
             FROM svc_llm_queue
         )
         SELECT q.ticket, q.granted_at IS NOT NULL AS granted, w.position::integer AS position,
                c.waiting::integer AS waiting, c.active::integer AS active, c.held_s, c.average_s
           FROM svc_llm_queue q LEFT JOIN waiting w USING (ticket) CROSS JOIN counts c
          WHERE q.ticket = ANY($1::bigint[])`,
        [tickets],
      );
      return rows;
    },

    /**
     * A ticket's calls finished (`calls` of them, `servedS` seconds in all; one by default), or a waiter left
     * (`timedOut` when it waited too long). Answers the queue as the ticket left it: the calls still waiting and those
     * holding a slot.
     */
    release(
      ticket: number,
      slots: number,
      outcome: { servedS?: number; calls?: number; timedOut?: boolean },
    ): Promise<{ waiting: number; active: number }> {
      return leaves.add({
        ticket,
        slots,
        servedS: outcome.servedS ?? null,
        timedOut: outcome.timedOut ?? false,
        calls: outcome.calls ?? 1,
      });
    },

    /** Grants what is free: also drops the tickets of processes that died, and so gives their slots back. */
    async grant(slots: number): Promise<void> {
      await pool.query(`SELECT svc_llm_grant($1)`, [slots]);
    },

    /** A process that stops gives back its tickets at once, rather than when their lease would lapse. */
    async dropOwner(owner: string, slots: number): Promise<void> {
      await underQueueLock(pool, async (client) => {
        await client.query(`DELETE FROM svc_llm_queue WHERE owner_id = $1`, [owner]);
        await client.query(`SELECT svc_llm_grant($1)`, [slots]);
      });
    },

    /**
     * Keeps the tickets this process still waits with or holds alive; the others lapse: those of a process that
     * stopped, and one whose release was lost (a change of the queue is committed without waiting for the disk, so a
     * crash of PostgreSQL itself may forget the last ones).
     */
    async renew(owner: string, leaseS: number, tickets: readonly number[]): Promise<void> {
      await underQueueLock(pool, (client) =>
        client.query(
          `UPDATE svc_llm_queue SET lease_until = now() + make_interval(secs => $2)
            WHERE owner_id = $1 AND ticket = ANY($3::bigint[])`,
          [owner, leaseS, tickets],
        ),
      );
    },

    async counts(): Promise<QueueCounts> {
      const { rows } = await pool.query<QueueCounts>(
        `SELECT (SELECT count(*) FROM svc_llm_queue WHERE granted_at IS NOT NULL)::integer AS active,
                (SELECT count(*) FROM svc_llm_queue WHERE granted_at IS NULL)::integer AS waiting,
                served::integer AS served, timed_out::integer AS timed_out, recent_s
           FROM svc_llm_queue_stats WHERE id = 1`,
      );
      return rows[0]!;
    },

    /** Forgets every slot held (their holders' releases then count for nothing) and the counters. */
    async reset(slots: number): Promise<void> {
      await underQueueLock(pool, async (client) => {
        await client.query(`DELETE FROM svc_llm_queue WHERE granted_at IS NOT NULL`);
        await client.query(`UPDATE svc_llm_queue_stats SET served = 0, timed_out = 0, recent_s = '{}' WHERE id = 1`);
        await client.query(`SELECT svc_llm_grant($1)`, [slots]);
      });
    },
  };
}

export type LlmQueueRepository = ReturnType<typeof llmQueueRepository>;
