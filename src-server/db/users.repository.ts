import { randomUUID } from 'node:crypto';
import { DEFAULT_ORG_ID } from '../contracts/tenancy';
import { withTransaction, type Pool } from './pool';

export interface UserRow {
  id: string;
  name: string | null;
  email: string | null;
}

export interface LoginUserRow extends UserRow {
  /** This sign-in created the very first user of the installation, who became admin of the default organisation. */
  firstUser: boolean;
}

export interface MembershipRow {
  scope_type: 'org' | 'team' | 'project';
  scope_id: string;
  scope_name: string;
  role: string;
}

/**
 * Serialises "is this the first user?" across processes. Its own key: 7_305_112 is the migrations', 7_305_113 the
 * local-runtime queue's (a sign-in used to queue behind the model calls' grants).
 */
const FIRST_USER_LOCK = 7_305_114;

/**
 * The issuer of the built-in principals' rows (the anonymous administrator and the API token's caller, whose fixed
 * ids are in auth/principal.ts). No identity provider's issuer is this: theirs are URLs.
 */
export const BUILT_IN_ISSUER = 'built-in';

export function usersRepository(pool: Pool) {
  return {
    /**
     * Creates or updates the user of an identity-provider login. The very first user of the installation (the
     * sign-in that creates the first row of svc_users besides the built-in ones) becomes admin of the default
     * organisation; every later user belongs nowhere until someone adds them, even when no organisation has an
     * admin left.
     */
    async upsertFromLogin(
      issuer: string,
      subject: string,
      name: string | null,
      email: string | null,
      emailVerified = false,
    ): Promise<LoginUserRow> {
      return withTransaction(pool, async (client) => {
        // Sign-ins queue here, in every process, so exactly one of them can find the table empty.
        await client.query('SELECT pg_advisory_xact_lock($1)', [FIRST_USER_LOCK]);
        const { rows: existing } = await client.query(`SELECT 1 FROM svc_users WHERE issuer <> $1 LIMIT 1`, [
          BUILT_IN_ISSUER,
        ]);
        const { rows } = await client.query<UserRow & { inserted: boolean }>(
          `INSERT INTO svc_users (id, issuer, subject, name, email, email_verified, last_login_at)
           VALUES ($1, $2, $3, $4, $5, $6, now())
         ON CONFLICT (issuer, subject) DO UPDATE SET name = EXCLUDED.name, email = EXCLUDED.email,
           email_verified = EXCLUDED.email_verified, last_login_at = now()
         RETURNING id, name, email, (xmax = 0) AS inserted`,
          [randomUUID(), issuer, subject, name, email, email !== null && emailVerified],
        );
        const { inserted, ...user } = rows[0]!;
        const firstUser = existing.length === 0 && inserted;
        if (firstUser) {
          await client.query(
            `INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'org', $2, 'admin') ON CONFLICT DO NOTHING`,
            [user.id, DEFAULT_ORG_ID],
          );
        }
        return { ...user, firstUser };
      });
    },

    /**
     * Rows for the built-in principals, so that the id `GET /auth/me` gives them is a user id wherever one is taken
     * (a role on a scope). Kept as they are once made; their subject is their name.
     */
    async ensureBuiltIn(principals: readonly { id: string; name: string }[]): Promise<void> {
      for (const { id, name } of principals) {
        await pool.query(
          `INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, $2, $3, $3) ON CONFLICT DO NOTHING`,
          [id, BUILT_IN_ISSUER, name],
        );
      }
    },

    async get(id: string): Promise<UserRow | undefined> {
      const { rows } = await pool.query<UserRow>(`SELECT id, name, email FROM svc_users WHERE id = $1`, [id]);
      return rows[0];
    },

    async memberships(userId: string): Promise<MembershipRow[]> {
      const { rows } = await pool.query<MembershipRow>(
        `SELECT m.scope_type, m.scope_id, m.role,
                COALESCE(o.name, t.name, p.name, '') AS scope_name
           FROM svc_memberships m
           LEFT JOIN svc_orgs o ON m.scope_type = 'org' AND o.id = m.scope_id
           LEFT JOIN svc_teams t ON m.scope_type = 'team' AND t.id = m.scope_id
           LEFT JOIN svc_projects p ON m.scope_type = 'project' AND p.id = m.scope_id
          WHERE m.user_id = $1
          ORDER BY m.scope_type, scope_name`,
        [userId],
      );
      return rows;
    },
  };
}

export type UsersRepository = ReturnType<typeof usersRepository>;
