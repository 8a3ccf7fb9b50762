import type { PendingGate } from '../contracts/runs';
import type { SlackDelivery, StopNotice } from '../contracts/slack';
import { stopId } from '../contracts/stops';
import { withTransaction, type Pool } from './pool';

/** A delivery this process holds: bring the message of the stop up to date (post it, or update it). */
export interface ClaimedStopDelivery {
  id: string;
  via: 'slack' | 'email';
  org_id: string;
  run_id: string;
  wait_seq: number;
  attempts: number;
}

interface DeliveryRow {
  id: string;
  run_id: string;
  wait_seq: string;
  status: SlackDelivery['status'];
  attempts: number;
  last_error: string | null;
  created_at: Date;
  last_attempt_at: Date | null;
}

/** A run as its stop's message or mail shows it. */
export interface StopRunRow {
  id: string;
  thread_id: string;
  agent: string;
  status: string;
  event_seq: number;
  pending_gate: PendingGate | null;
  gate_expires_at: Date | null;
  project_id: string;
  project_name: string;
  team_id: string;
  org_id: string;
}

/** Serialises claims across processes: two deliveries of one stop are never sent at once, nor out of order. */
const CLAIM_LOCK = 7_305_117;

/**
 * The outbox of stops' messages (migrations/0007-slack.ts): the triggers queue a row whenever a stop of an organisation
 * with Slack starts waiting, is decided, expires or is left; each process's worker claims rows (a lease, as the
 * webhooks' outbox does), and a row is sent only when no other row of its stop is in flight or older.
 */
export function stopDeliveriesRepository(pool: Pool) {
  return {
    async claim(owner: string, leaseS: number, limit: number): Promise<ClaimedStopDelivery[]> {
      return withTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [CLAIM_LOCK]);
        const { rows } = await client.query<ClaimedStopDelivery & { wait_seq: string }>(
          `WITH due AS (
             SELECT d.id FROM svc_stop_deliveries d
              WHERE d.status = 'pending' AND d.next_attempt_at <= now()
                AND (d.lease_until IS NULL OR d.lease_until < now())
                AND NOT EXISTS (SELECT 1 FROM svc_stop_deliveries o
                                 WHERE o.run_id = d.run_id AND o.wait_seq = d.wait_seq AND o.via = d.via
                                   AND o.status = 'pending' AND o.id <> d.id
                                   AND (o.lease_until > now() OR (o.created_at, o.id) < (d.created_at, d.id)))
              ORDER BY d.next_attempt_at LIMIT $3)
           UPDATE svc_stop_deliveries s
              SET claimed_by = $1, lease_until = now() + make_interval(secs => $2), attempts = s.attempts + 1
             FROM due WHERE s.id = due.id
           RETURNING s.id, s.via, s.org_id, s.run_id, s.wait_seq, s.attempts`,
          [owner, leaseS, limit],
        );
        return rows.map((r) => ({ ...r, wait_seq: Number(r.wait_seq) }));
      });
    },

    /** The rows of a stop and a door waiting now, which one sync covers (it reads the stop after them). */
    async pendingOfStop(delivery: ClaimedStopDelivery): Promise<string[]> {
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM svc_stop_deliveries WHERE run_id = $1 AND wait_seq = $2 AND via = $3 AND status = 'pending'`,
        [delivery.run_id, delivery.wait_seq, delivery.via],
      );
      return rows.map((r) => r.id);
    },

    /** Sent: this row, and the rows of its stop its sync covered. */
    async delivered(id: string, owner: string, covered: readonly string[]): Promise<void> {
      await pool.query(
        `UPDATE svc_stop_deliveries SET status = 'delivered', claimed_by = NULL, lease_until = NULL,
                last_attempt_at = now(), last_error = NULL
          WHERE (id = $1 AND claimed_by = $2) OR (id = ANY($3::uuid[]) AND status = 'pending' AND claimed_by IS NULL)`,
        [id, owner, covered],
      );
    },

    /** Failed: tried again after `retryInS`, or given up when there is none. */
    async failed(id: string, owner: string, error: string, retryInS: number | null): Promise<void> {
      await pool.query(
        `UPDATE svc_stop_deliveries SET claimed_by = NULL, lease_until = NULL, last_attempt_at = now(), last_error = $3,
                status = CASE WHEN $4::double precision IS NULL THEN 'failed' ELSE 'pending' END,
                next_attempt_at = now() + make_interval(secs => COALESCE($4::double precision, 0))
          WHERE id = $1 AND claimed_by = $2`,
        [id, owner, error.slice(0, 500), retryInS],
      );
    },

    /** Gives a claim back uncounted (the process is stopping). */
    async release(id: string, owner: string): Promise<void> {
      await pool.query(
        `UPDATE svc_stop_deliveries SET claimed_by = NULL, lease_until = NULL, attempts = attempts - 1
          WHERE id = $1 AND claimed_by = $2`,
        [id, owner],
      );
    },

    /** Seconds until the next row falls due (or a lease lapses); null when nothing is pending. */
    async nextDueInS(): Promise<number | null> {
      const { rows } = await pool.query<{ s: number | null }>(
        `SELECT EXTRACT(EPOCH FROM (min(GREATEST(next_attempt_at, COALESCE(lease_until, next_attempt_at))) - now()))::float8 AS s
           FROM svc_stop_deliveries WHERE status = 'pending'`,
      );
      return rows[0]?.s ?? null;
    },

    async latestOfOrg(orgId: string, via: ClaimedStopDelivery['via'], limit: number): Promise<SlackDelivery[]> {
      const { rows } = await pool.query<DeliveryRow>(
        `SELECT id, run_id, wait_seq, status, attempts, last_error, created_at, last_attempt_at
           FROM svc_stop_deliveries WHERE org_id = $1 AND via = $2 ORDER BY created_at DESC LIMIT $3`,
        [orgId, via, limit],
      );
      return rows.map((r) => ({
        id: r.id,
        stop_id: stopId(r.run_id, Number(r.wait_seq)),
        status: r.status,
        attempts: r.attempts,
        last_error: r.last_error,
        created_at: r.created_at.toISOString(),
        last_attempt_at: r.last_attempt_at?.toISOString() ?? null,
      }));
    },

    /** Where each stop was sent and how that went (the latest delivery through each door), by stop id. */
    async noticesOf(stops: readonly { runId: string; waitSeq: number }[]): Promise<Map<string, StopNotice[]>> {
      const notices = new Map<string, StopNotice[]>();
      if (!stops.length) return notices;
      const { rows } = await pool.query<{
        run_id: string;
        wait_seq: string;
        via: StopNotice['via'];
        status: StopNotice['status'];
        last_error: string | null;
        channel: string | null;
        recipients: string[] | null;
      }>(
        `SELECT DISTINCT ON (d.run_id, d.wait_seq, d.via) d.run_id, d.wait_seq, d.via, d.status, d.last_error,
                m.shown_as AS channel,
                (SELECT array_agg(l.recipient ORDER BY l.recipient) FROM svc_email_links l
                  WHERE l.run_id = d.run_id AND l.wait_seq = d.wait_seq AND l.sent_at IS NOT NULL) AS recipients
           FROM svc_stop_deliveries d
           JOIN unnest($1::uuid[], $2::bigint[]) AS s(run_id, wait_seq)
             ON s.run_id = d.run_id AND s.wait_seq = d.wait_seq
           LEFT JOIN svc_slack_messages m ON m.run_id = d.run_id AND m.wait_seq = d.wait_seq
          ORDER BY d.run_id, d.wait_seq, d.via DESC, d.created_at DESC`,
        [stops.map((s) => s.runId), stops.map((s) => s.waitSeq)],
      );
      for (const r of rows) {
        const id = stopId(r.run_id, Number(r.wait_seq));
        const to = r.via === 'slack' ? (r.channel ?? 'Slack') : (r.recipients ?? []).join(', ') || 'nobody yet';
        notices.set(id, [...(notices.get(id) ?? []), { via: r.via, to, status: r.status, error: r.last_error }]);
      }
      return notices;
    },

    /** A run as a stop's message or mail needs it: where it belongs, and where it stands. */
    async runOfStop(runId: string): Promise<StopRunRow | undefined> {
      const { rows } = await pool.query<StopRunRow>(
        `SELECT r.id, r.thread_id, r.agent, r.status, r.event_seq::integer AS event_seq, r.pending_gate,
                r.gate_expires_at, th.project_id, p.name AS project_name, p.team_id, t.org_id
           FROM svc_runs r JOIN svc_threads th ON th.id = r.thread_id JOIN svc_projects p ON p.id = th.project_id
           JOIN svc_teams t ON t.id = p.team_id
          WHERE r.id = $1`,
        [runId],
      );
      return rows[0];
    },
  };
}

export type StopDeliveriesRepository = ReturnType<typeof stopDeliveriesRepository>;
