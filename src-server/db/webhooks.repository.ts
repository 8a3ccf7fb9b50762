import type { Delivery, DeliveryAttempt, Webhook, WebhookEventType, WebhookPayload } from '../contracts/webhooks';
import { withTransaction, type Pool } from './pool';

/**
 * The channel on which the outbox announces new deliveries. The triggers of the migrations notify it in the transaction
 * that queued them (so a worker hears of a delivery only once it is committed); every process's worker listens.
 */
export const WEBHOOK_CHANNEL = 'svc_webhooks';

/** Where a webhook belongs: one project, or one organisation and all its projects. */
export type WebhookScope = { type: 'project' | 'org'; id: string };

export interface WebhookRow {
  id: string;
  project_id: string | null;
  org_id: string | null;
  url: string;
  events: WebhookEventType[];
  created_at: Date;
}

/** A delivery this process has claimed: what to send, where, and the how-many-th attempt this is. */
export interface ClaimedDelivery {
  id: string;
  webhook_id: string;
  event_type: WebhookEventType;
  attempt: number;
  payload: string;
  url: string;
  secret: string;
  /** The trace of the run the event is about (its W3C traceparent), which the delivery continues; null: none. */
  trace_context: string | null;
}

/** How an attempt went, as it is kept and shown. */
export interface AttemptResult {
  attemptedAt: Date;
  durationMs: number;
  httpStatus: number | null;
  error: string | null;
}

/**
 * How many deliveries of one tenant may be in flight at once across the cluster
 * (docs/webhooks.md#fairness-between-tenants).
 */
export interface InFlightLimits {
  perOrg: number;
  perProject: number;
}

const SCOPE_COLUMN = { project: 'project_id', org: 'org_id' } as const;

/**
 * Registrations on one scope take turns under this lock, with the scope's id as the second key (the two-key form, a
 * key space apart from the single keys of the other locks), so that none slips past the scope's limit.
 */
const SCOPE_LOCK = 7_305_115;
/**
 * Serialises the claims of every process: a claim counts the rows in flight and leases more in one step, so two
 * claims never both see room under a tenant's limit. Its own key beside 7_305_112 to 7_305_114 (migrations, the
 * local-runtime queue, the first sign-in). A claim waits on no row (SKIP LOCKED), so nothing waits on it for long.
 */
const CLAIM_LOCK = 7_305_116;

/**
 * Every webhook with the tenant it belongs to: its organisation, and its project (null for an organisation's own
 * webhooks, which take their turns as one more project would); and the attempts in flight (rows under a live lease)
 * of each tenant. A lapsed lease belongs to a process that died: its row is due again, not in flight. Both read
 * through indexes (migrations/), so their cost follows the number of webhooks and attempts in flight, not the backlog.
 */
const TENANTS = `hooks AS (
  SELECT w.id, COALESCE(w.org_id, t.org_id) AS org_id, w.project_id
    FROM svc_webhooks w
    LEFT JOIN svc_projects p ON p.id = w.project_id
    LEFT JOIN svc_teams t ON t.id = p.team_id
), busy_project AS (
  SELECT h.org_id, h.project_id, count(*) AS n
    FROM svc_webhook_deliveries d JOIN hooks h ON h.id = d.webhook_id
   WHERE d.status = 'pending' AND d.lease_until > now()
   GROUP BY h.org_id, h.project_id
), busy_org AS (
  SELECT org_id, sum(n) AS n FROM busy_project GROUP BY org_id
)`;

const toWebhook = (row: WebhookRow): Webhook => ({
  id: row.id,
  url: row.url,
  events: row.events,
  project_id: row.project_id,
  org_id: row.org_id,
  created_at: row.created_at.toISOString(),
});

const iso = (date: Date | null) => date?.toISOString() ?? null;

/**
 * Webhooks, their outbox (svc_webhook_deliveries) and the attempts of each delivery. The outbox is written by the
 * triggers of the migrations; this file claims its rows and records how each attempt went. A claim is a lease held by
 * one process: `claimed_by` says whose, so an answer that comes back after another process took the row over is
 * not recorded twice.
 */
export function webhooksRepository(pool: Pool) {
  return {
    /**
     * Registers a webhook unless its scope already has `max` of its own; undefined then. Registrations on one scope
     * take turns, so concurrent ones cannot together pass the limit.
     */
    async insertWithin(
      webhook: {
        id: string;
        scope: WebhookScope;
        url: string;
        events: readonly WebhookEventType[];
        secret: string;
        createdBy: string;
      },
      max: number,
    ): Promise<Webhook | undefined> {
      const column = SCOPE_COLUMN[webhook.scope.type];
      return withTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [SCOPE_LOCK, webhook.scope.id]);
        const { rows } = await client.query<WebhookRow>(
          `INSERT INTO svc_webhooks (id, ${column}, url, events, secret, created_by)
           SELECT $1, $2, $3, $4, $5, $6
            WHERE (SELECT count(*) FROM svc_webhooks WHERE ${column} = $2) < $7
           RETURNING id, project_id, org_id, url, events, created_at`,
          [webhook.id, webhook.scope.id, webhook.url, webhook.events, webhook.secret, webhook.createdBy, max],
        );
        return rows[0] && toWebhook(rows[0]);
      });
    },

    async get(id: string): Promise<Webhook | undefined> {
      const { rows } = await pool.query<WebhookRow>(
        `SELECT id, project_id, org_id, url, events, created_at FROM svc_webhooks WHERE id = $1`,
        [id],
      );
      return rows[0] && toWebhook(rows[0]);
    },

    /** The webhooks registered on the scope itself (an organisation's list leaves its projects' out). */
    async list(scope: WebhookScope): Promise<Webhook[]> {
      const { rows } = await pool.query<WebhookRow>(
        `SELECT id, project_id, org_id, url, events, created_at FROM svc_webhooks
          WHERE ${SCOPE_COLUMN[scope.type]} = $1 ORDER BY created_at, id`,
        [scope.id],
      );
      return rows.map(toWebhook);
    },

    /** Deletes the webhook with its deliveries and their attempts; false when there was none. */
    async remove(id: string): Promise<boolean> {
      const result = await pool.query(`DELETE FROM svc_webhooks WHERE id = $1`, [id]);
      return (result.rowCount ?? 0) > 0;
    },

    /** The newest `limit` deliveries of a webhook, each with its attempts, oldest attempt first. */
    async deliveries(webhookId: string, limit: number): Promise<Delivery[]> {
      const { rows } = await pool.query<{
        id: string;
        event_type: WebhookEventType;
        status: Delivery['status'];
        payload: string;
        created_at: Date;
        next_attempt_at: Date;
        delivered_at: Date | null;
      }>(
        `SELECT id, event_type, status, payload, created_at, next_attempt_at, delivered_at
           FROM svc_webhook_deliveries WHERE webhook_id = $1
          ORDER BY created_at DESC, id LIMIT $2`,
        [webhookId, limit],
      );
      const { rows: attempts } = await pool.query<{
        delivery_id: string;
        attempt: number;
        attempted_at: Date;
        duration_ms: number | null;
        http_status: number | null;
        error: string | null;
      }>(
        `SELECT delivery_id, attempt, attempted_at, duration_ms, http_status, error FROM svc_webhook_attempts
          WHERE delivery_id = ANY($1::uuid[]) ORDER BY attempt, id`,
        [rows.map((row) => row.id)],
      );
      const byDelivery = new Map<string, DeliveryAttempt[]>();
      for (const { delivery_id, attempted_at, ...attempt } of attempts) {
        const list = byDelivery.get(delivery_id) ?? [];
        list.push({ ...attempt, attempted_at: attempted_at.toISOString() });
        byDelivery.set(delivery_id, list);
      }
      return rows.map((row) => ({
        id: row.id,
        event_type: row.event_type,
        status: row.status,
        created_at: row.created_at.toISOString(),
        next_attempt_at: row.status === 'pending' ? row.next_attempt_at.toISOString() : null,
        delivered_at: iso(row.delivered_at),
        payload: JSON.parse(row.payload) as WebhookPayload,
        attempts: byDelivery.get(row.id) ?? [],
      }));
    },

    /**
     * Claims up to `limit` deliveries that are due, for `leaseS` seconds, fairly: no tenant beyond its limits of
     * deliveries in flight across the cluster, and turn by turn, organisations first, then the projects within one.
     * A tenant's turn counts its attempts already in flight, so the tenant with the fewest goes first, and one whose
     * receivers hang waits behind everyone else's deliveries rather than in front of them.
     *
     * Each row goes to one process: the claims of every process take turns (CLAIM_LOCK), and a row that a record or
     * a removal holds is skipped (SKIP LOCKED). A row whose lease lapsed was being sent by a process that died: that
     * attempt is written down as cut off, and the row is claimed again, or given up when it has had `maxAttempts`.
     */
    async claim(
      owner: string,
      leaseS: number,
      limit: number,
      maxAttempts: number,
      limits: InFlightLimits,
    ): Promise<ClaimedDelivery[]> {
      return withTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [CLAIM_LOCK]);
        const { rows } = await client.query<ClaimedDelivery>(
          `WITH ${TENANTS}, candidates AS (
             -- A project takes at most $6 a claim, so each webhook's first $6 due rows are all that can be chosen.
             SELECT d.id, h.org_id, h.project_id, d.next_attempt_at, d.created_at
               FROM hooks h CROSS JOIN LATERAL (
                 SELECT id, next_attempt_at, created_at FROM svc_webhook_deliveries
                  WHERE webhook_id = h.id AND status = 'pending' AND next_attempt_at <= now()
                    AND (lease_until IS NULL OR lease_until <= now())
                  ORDER BY next_attempt_at, created_at LIMIT $6
               ) d
           ), in_project AS (
             SELECT c.id, c.org_id, c.next_attempt_at, c.created_at,
                    COALESCE(b.n, 0) + row_number() OVER (PARTITION BY c.org_id, c.project_id
                                                          ORDER BY c.next_attempt_at, c.created_at, c.id) AS turn
               FROM candidates c
               LEFT JOIN busy_project b ON b.org_id = c.org_id AND b.project_id IS NOT DISTINCT FROM c.project_id
           ), in_org AS (
             SELECT i.id, i.next_attempt_at, i.created_at,
                    COALESCE(b.n, 0) + row_number() OVER (PARTITION BY i.org_id
                                                          ORDER BY i.turn, i.next_attempt_at, i.created_at, i.id) AS turn
               FROM in_project i LEFT JOIN busy_org b ON b.org_id = i.org_id
              WHERE i.turn <= $6
           ), chosen AS (
             SELECT id FROM in_org WHERE turn <= $5 ORDER BY turn, next_attempt_at, created_at, id LIMIT $3
           ), due AS (
             SELECT id, attempts, claimed_at, lease_until FROM svc_webhook_deliveries
              WHERE id IN (SELECT id FROM chosen) AND status = 'pending'
                AND (lease_until IS NULL OR lease_until <= now())
              FOR UPDATE SKIP LOCKED
           ), cut_off AS (
             INSERT INTO svc_webhook_attempts (delivery_id, attempt, attempted_at, duration_ms, http_status, error)
             SELECT id, attempts, claimed_at, NULL, NULL, 'no answer recorded: the server process sending it stopped'
               FROM due WHERE lease_until IS NOT NULL
           ), given_up AS (
             UPDATE svc_webhook_deliveries d SET status = 'failed', claimed_by = NULL, lease_until = NULL
               FROM due WHERE d.id = due.id AND due.attempts >= $4
           ), claimed AS (
             UPDATE svc_webhook_deliveries d
                SET attempts = d.attempts + 1, claimed_by = $1, claimed_at = now(),
                    lease_until = now() + make_interval(secs => $2)
               FROM due WHERE d.id = due.id AND due.attempts < $4
             RETURNING d.id, d.webhook_id, d.event_type, d.attempts AS attempt, d.payload
           )
           SELECT c.id, c.webhook_id, c.event_type, c.attempt, c.payload, w.url, w.secret,
                  (SELECT r.trace_context FROM svc_runs r
                    WHERE r.id::text = c.payload::jsonb->'data'->>'run_id') AS trace_context
             FROM claimed c JOIN svc_webhooks w ON w.id = c.webhook_id`,
          [owner, leaseS, limit, maxAttempts, limits.perOrg, limits.perProject],
        );
        return rows;
      });
    },

    /**
     * Records an attempt of a delivery `owner` holds: delivered, or failed and due again after `retryBaseS` doubled
     * for each attempt so far (at most a day), or failed for good after `maxAttempts`. Nothing is recorded when the
     * row is no longer ours: the process that took it over has recorded this attempt as cut off.
     */
    async record(
      id: string,
      owner: string,
      result: AttemptResult & { delivered: boolean },
      retry: { baseS: number; maxAttempts: number },
    ): Promise<{ status: Delivery['status']; attempt: number } | undefined> {
      const { rows } = await pool.query<{ status: Delivery['status']; attempt: number }>(
        `WITH mine AS (
           UPDATE svc_webhook_deliveries
              SET status = CASE WHEN $3::boolean THEN 'delivered' WHEN attempts >= $8 THEN 'failed' ELSE 'pending' END,
                  delivered_at = CASE WHEN $3 THEN now() END,
                  next_attempt_at = CASE WHEN $3 THEN next_attempt_at
                    ELSE now() + make_interval(secs => LEAST($7 * power(2, attempts - 1), 86400)) END,
                  claimed_by = NULL, lease_until = NULL
            WHERE id = $1 AND claimed_by = $2 AND status = 'pending'
            RETURNING id, attempts, status
         ), kept AS (
           INSERT INTO svc_webhook_attempts (delivery_id, attempt, attempted_at, duration_ms, http_status, error)
           SELECT id, attempts, $4::timestamptz, $5::float8, $6::integer, $9::text FROM mine
         )
         SELECT status, attempts AS attempt FROM mine`,
        [
          id,
          owner,
          result.delivered,
          result.attemptedAt,
          result.durationMs,
          result.httpStatus,
          retry.baseS,
          retry.maxAttempts,
          result.error,
        ],
      );
      return rows[0];
    },

    /** Gives back a claim whose attempt was stopped by a shutdown: it does not count, and any process may send it. */
    async release(id: string, owner: string): Promise<void> {
      await pool.query(
        `UPDATE svc_webhook_deliveries SET attempts = attempts - 1, claimed_by = NULL, lease_until = NULL
          WHERE id = $1 AND claimed_by = $2 AND status = 'pending'`,
        [id, owner],
      );
    },

    /**
     * Seconds until the next delivery this process could claim falls due (0 when one is due now, null when none is
     * pending): a retry's time, or the end of a lease, which frees a place under its tenant's limits or gives back
     * the row of a process that may have died. A tenant at its limit has nothing due until one of its attempts ends:
     * the sender that made it reads again then, and the others at their next look.
     */
    async nextDueInS(limits: InFlightLimits): Promise<number | null> {
      const { rows } = await pool.query<{ wait_s: number | null }>(
        // GREATEST ignores a NULL: without the CASE, an empty outbox answered 0 (due now), and every process read it
        // twenty times a second while nothing was queued.
        `WITH ${TENANTS}, due AS (
           SELECT LEAST(
                  (SELECT min(lease_until) FROM svc_webhook_deliveries WHERE status = 'pending' AND lease_until > now()),
                  (SELECT min(d.next_attempt_at)
                     FROM hooks h
                     LEFT JOIN busy_org bo ON bo.org_id = h.org_id
                     LEFT JOIN busy_project bp ON bp.org_id = h.org_id
                                              AND bp.project_id IS NOT DISTINCT FROM h.project_id
                     CROSS JOIN LATERAL (
                       SELECT next_attempt_at FROM svc_webhook_deliveries
                        WHERE webhook_id = h.id AND status = 'pending' AND (lease_until IS NULL OR lease_until <= now())
                        ORDER BY next_attempt_at LIMIT 1
                     ) d
                    WHERE COALESCE(bo.n, 0) < $1 AND COALESCE(bp.n, 0) < $2)
                  ) AS at
         )
         SELECT CASE WHEN at IS NULL THEN NULL ELSE GREATEST(0, extract(epoch FROM at - now()))::float8 END AS wait_s
           FROM due`,
        [limits.perOrg, limits.perProject],
      );
      return rows[0]?.wait_s ?? null;
    },

    /** Drops deliveries that ended (delivered or failed) over `days` days ago; returns how many. */
    async prune(days: number): Promise<number> {
      const result = await pool.query(
        `DELETE FROM svc_webhook_deliveries
          WHERE status <> 'pending' AND created_at < now() - make_interval(days => $1)`,
        [days],
      );
      return result.rowCount ?? 0;
    },
  };
}

export type WebhooksRepository = ReturnType<typeof webhooksRepository>;
