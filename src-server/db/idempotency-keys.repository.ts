import type { Pool } from './pool';

/** How long a key is kept: a retry within this time answers as the first request did. */
export const IDEMPOTENCY_KEY_TTL_HOURS = 24;

/**
 * A claim left in flight longer than this was abandoned (its process stopped before it answered): a retry takes it
 * over. Every request that takes a key answers (or starts its stream) within seconds.
 */
const ABANDONED_AFTER_S = 60;

/** What a key holds when a request claims it. */
export type IdempotencyClaim =
  | { state: 'claimed' }
  | { state: 'in_flight' }
  | { state: 'other_request' }
  | { state: 'answered'; status: number; body: unknown };

/** Idempotency-Key records (svc_idempotency_keys): one per caller and key, the first answer once it is known. */
export function idempotencyKeysRepository(pool: Pool) {
  /** Inserts the claim, or takes over an expired record or an abandoned claim of the same request. */
  async function insertClaim(caller: string, key: string, fingerprint: string): Promise<boolean> {
    const { rowCount } = await pool.query(
      `INSERT INTO svc_idempotency_keys (caller, key, fingerprint) VALUES ($1, $2, $3)
       ON CONFLICT (caller, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = NULL, body = NULL,
                                               created_at = now()
        WHERE svc_idempotency_keys.created_at < now() - make_interval(hours => $4)
           OR (svc_idempotency_keys.status IS NULL
               AND svc_idempotency_keys.fingerprint = EXCLUDED.fingerprint
               AND svc_idempotency_keys.created_at < now() - make_interval(secs => $5))`,
      [caller, key, fingerprint, IDEMPOTENCY_KEY_TTL_HOURS, ABANDONED_AFTER_S],
    );
    return (rowCount ?? 0) > 0;
  }

  return {
    async claim(caller: string, key: string, fingerprint: string): Promise<IdempotencyClaim> {
      // Twice at most: a claim released between the insert and the read is gone, and is claimed again.
      for (let attempt = 0; attempt < 2; attempt++) {
        if (await insertClaim(caller, key, fingerprint)) return { state: 'claimed' };
        const { rows } = await pool.query<{ fingerprint: string; status: number | null; body: unknown }>(
          'SELECT fingerprint, status, body FROM svc_idempotency_keys WHERE caller = $1 AND key = $2',
          [caller, key],
        );
        const row = rows[0];
        if (!row) continue;
        if (row.fingerprint !== fingerprint) return { state: 'other_request' };
        if (row.status === null) return { state: 'in_flight' };
        return { state: 'answered', status: row.status, body: row.body };
      }
      return { state: 'in_flight' };
    },

    /** The first answer, kept for the retries. */
    async answer(caller: string, key: string, status: number, body: unknown): Promise<void> {
      await pool.query('UPDATE svc_idempotency_keys SET status = $3, body = $4::json WHERE caller = $1 AND key = $2', [
        caller,
        key,
        status,
        JSON.stringify(body),
      ]);
    },

    /** The request failed: nothing is kept, so a retry runs it again. */
    async release(caller: string, key: string): Promise<void> {
      await pool.query('DELETE FROM svc_idempotency_keys WHERE caller = $1 AND key = $2 AND status IS NULL', [
        caller,
        key,
      ]);
    },

    /** Drops the records older than the time a key is kept. */
    async prune(): Promise<number> {
      const result = await pool.query(
        'DELETE FROM svc_idempotency_keys WHERE created_at < now() - make_interval(hours => $1)',
        [IDEMPOTENCY_KEY_TTL_HOURS],
      );
      return result.rowCount ?? 0;
    },
  };
}

export type IdempotencyKeysRepository = ReturnType<typeof idempotencyKeysRepository>;
