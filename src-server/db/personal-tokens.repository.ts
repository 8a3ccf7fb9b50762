import type { PersonalToken } from '../contracts/auth';
import { withTransaction, type Pool } from './pool';

interface PersonalTokenRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
}

/** A live token found by its digest, with its owner as svc_users holds her now. */
export interface TokenOwnerRow {
  id: string;
  user_id: string;
  name: string | null;
  email: string | null;
  /** Whether last_used_at is a minute old or more (or unset), by the database's clock: time to write it again. */
  stale: boolean;
}

const COLUMNS = 'id, name, prefix, created_at, last_used_at';

const toToken = (row: PersonalTokenRow): PersonalToken => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  created_at: row.created_at.toISOString(),
  last_used_at: row.last_used_at?.toISOString() ?? null,
});

/** Personal access tokens (svc_personal_tokens): stored by their SHA-256 only, never the token itself. */
export function personalTokensRepository(pool: Pool) {
  return {
    /**
     * Adds a token unless its owner already has `max` live ones ('over_limit') or no longer exists ('no_user'). The
     * owner's row is locked first, so that concurrent creations count one after the other and cannot together pass
     * the limit.
     */
    async insertWithin(
      token: { id: string; userId: string; name: string; sha256: string; prefix: string },
      max: number,
    ): Promise<PersonalToken | 'over_limit' | 'no_user'> {
      return withTransaction(pool, async (client) => {
        const owner = await client.query(`SELECT 1 FROM svc_users WHERE id = $1 FOR NO KEY UPDATE`, [token.userId]);
        if (owner.rowCount === 0) return 'no_user';
        const { rows } = await client.query<PersonalTokenRow>(
          `INSERT INTO svc_personal_tokens (id, user_id, name, token_sha256, prefix)
           SELECT $1, $2, $3, $4, $5
            WHERE (SELECT count(*) FROM svc_personal_tokens WHERE user_id = $2 AND revoked_at IS NULL) < $6
           RETURNING ${COLUMNS}`,
          [token.id, token.userId, token.name, token.sha256, token.prefix, max],
        );
        return rows[0] ? toToken(rows[0]) : 'over_limit';
      });
    },

    /** A user's live tokens, newest first. */
    async listLive(userId: string): Promise<PersonalToken[]> {
      const { rows } = await pool.query<PersonalTokenRow>(
        `SELECT ${COLUMNS} FROM svc_personal_tokens WHERE user_id = $1 AND revoked_at IS NULL
          ORDER BY created_at DESC, id`,
        [userId],
      );
      return rows.map(toToken);
    },

    /** Revokes one of the user's tokens (one already revoked stays as it was); false when she has none by that id. */
    async revoke(userId: string, id: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_personal_tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 AND user_id = $2`,
        [id, userId],
      );
      return rowCount === 1;
    },

    /** The live token with this digest and its owner; a revoked token, or one whose owner was deleted, is none. */
    async findLive(sha256: string): Promise<TokenOwnerRow | undefined> {
      const { rows } = await pool.query<TokenOwnerRow>(
        `SELECT t.id, t.user_id, u.name, u.email,
                (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute') AS stale
           FROM svc_personal_tokens t JOIN svc_users u ON u.id = t.user_id
          WHERE t.token_sha256 = $1 AND t.revoked_at IS NULL`,
        [sha256],
      );
      return rows[0];
    },

    async touch(id: string): Promise<void> {
      await pool.query(`UPDATE svc_personal_tokens SET last_used_at = now() WHERE id = $1`, [id]);
    },
  };
}

export type PersonalTokensRepository = ReturnType<typeof personalTokensRepository>;
