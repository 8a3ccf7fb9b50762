import type { McpGrant } from '../contracts/oauth';
import { withTransaction, type Pool } from './pool';

/** A client as the authorization server knows it: what it registered or its metadata document says. */
export interface OauthClientRow {
  client_id: string;
  kind: 'registered' | 'metadata_document';
  /** The client's metadata (RFC 7591): redirect_uris, client_name, token_endpoint_auth_method and the rest. */
  metadata: Record<string, unknown> & { redirect_uris: string[] };
  client_secret: string | null;
  created_at: Date;
  /** Whether a metadata document is due to be fetched again. */
  stale: boolean;
}

/** An authorization request on its way through sign-in and consent. */
export interface OauthRequestRow {
  id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | null;
  scopes: string[];
  resource: string;
  user_id: string | null;
  consent_sha256: string | null;
}

/** A live token and the person and grant it is for. */
export interface LiveOauthTokenRow {
  grant_id: string;
  user_id: string;
  name: string | null;
  email: string | null;
  client_id: string;
  scopes: string[];
  resource: string;
  expires_at: Date;
  /** Whether the grant's last use is a minute old or more (or unset): time to write it again. */
  stale: boolean;
}

interface GrantRow {
  id: string;
  client_id: string;
  client_name: string;
  client_uri: string | null;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
}

const toGrant = (row: GrantRow): McpGrant => ({
  id: row.id,
  client_id: row.client_id,
  client_name: row.client_name,
  client_uri: row.client_uri,
  scopes: row.scopes,
  created_at: row.created_at.toISOString(),
  last_used_at: row.last_used_at?.toISOString() ?? null,
});

/** What a refresh token's use found: the grant it continues, or that it was used before (the grant is ended). */
export type RefreshUse = { grant_id: string; scopes: string[]; resource: string } | 'reused' | undefined;

/**
 * The OAuth authorization server's rows (svc_oauth_*): tokens and codes by their SHA-256 only. Each token belongs to a
 * grant, which revoking ends with all its tokens; a grant and its tokens go with their person.
 */
export function oauthRepository(pool: Pool) {
  return {
    async client(clientId: string): Promise<OauthClientRow | undefined> {
      const { rows } = await pool.query<OauthClientRow>(
        `SELECT client_id, kind, metadata, client_secret, created_at,
                (refresh_after IS NOT NULL AND refresh_after < now()) AS stale
           FROM svc_oauth_clients WHERE client_id = $1`,
        [clientId],
      );
      return rows[0];
    },

    async registerClient(client: {
      client_id: string;
      metadata: Record<string, unknown>;
      client_secret: string | null;
    }): Promise<void> {
      await pool.query(
        `INSERT INTO svc_oauth_clients (client_id, kind, metadata, client_secret) VALUES ($1, 'registered', $2, $3)`,
        [client.client_id, JSON.stringify(client.metadata), client.client_secret],
      );
    },

    /** Keeps what a client's metadata document says now, until `refreshAfterS` from now. */
    async keepMetadataDocument(clientId: string, metadata: Record<string, unknown>, refreshAfterS: number) {
      await pool.query(
        `INSERT INTO svc_oauth_clients (client_id, kind, metadata, refresh_after)
         VALUES ($1, 'metadata_document', $2, now() + make_interval(secs => $3))
         ON CONFLICT (client_id) DO UPDATE SET metadata = EXCLUDED.metadata, refresh_after = EXCLUDED.refresh_after
          WHERE svc_oauth_clients.kind = 'metadata_document'`,
        [clientId, JSON.stringify(metadata), refreshAfterS],
      );
    },

    async createRequest(request: Omit<OauthRequestRow, 'user_id' | 'consent_sha256'>, ttlS: number): Promise<void> {
      await pool.query(
        `INSERT INTO svc_oauth_requests (id, client_id, redirect_uri, code_challenge, state, scopes, resource, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))`,
        [
          request.id,
          request.client_id,
          request.redirect_uri,
          request.code_challenge,
          request.state,
          request.scopes,
          request.resource,
          ttlS,
        ],
      );
    },

    /** A request still in time, and not yet given its code. */
    async openRequest(id: string): Promise<OauthRequestRow | undefined> {
      const { rows } = await pool.query<OauthRequestRow>(
        `SELECT id, client_id, redirect_uri, code_challenge, state, scopes, resource, user_id, consent_sha256
           FROM svc_oauth_requests WHERE id = $1 AND expires_at > now() AND code_sha256 IS NULL`,
        [id],
      );
      return rows[0];
    },

    /** The person who signed in for a request, and the digest of the consent cookie her browser got. */
    async signedIn(id: string, userId: string, consentSha256: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_oauth_requests SET user_id = $2, consent_sha256 = $3
          WHERE id = $1 AND expires_at > now() AND code_sha256 IS NULL`,
        [id, userId, consentSha256],
      );
      return rowCount === 1;
    },

    /** Gives an allowed request its code, once; false when it is gone, late, or was given one already. */
    async allow(id: string, consentSha256: string, codeSha256: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_oauth_requests SET code_sha256 = $3
          WHERE id = $1 AND consent_sha256 = $2 AND expires_at > now() AND code_sha256 IS NULL`,
        [id, consentSha256, codeSha256],
      );
      return rowCount === 1;
    },

    async deleteRequest(id: string): Promise<void> {
      await pool.query(`DELETE FROM svc_oauth_requests WHERE id = $1`, [id]);
    },

    /** The request a live code was given to, for this client, without using the code. */
    async requestOfCode(codeSha256: string, clientId: string): Promise<OauthRequestRow | undefined> {
      const { rows } = await pool.query<OauthRequestRow>(
        `SELECT id, client_id, redirect_uri, code_challenge, state, scopes, resource, user_id, consent_sha256
           FROM svc_oauth_requests WHERE code_sha256 = $1 AND client_id = $2 AND expires_at > now()`,
        [codeSha256, clientId],
      );
      return rows[0];
    },

    /** Uses a code: its request is deleted and answered, to one caller only. */
    async takeCode(codeSha256: string, clientId: string): Promise<OauthRequestRow | undefined> {
      const { rows } = await pool.query<OauthRequestRow>(
        `DELETE FROM svc_oauth_requests WHERE code_sha256 = $1 AND client_id = $2 AND expires_at > now()
          RETURNING id, client_id, redirect_uri, code_challenge, state, scopes, resource, user_id, consent_sha256`,
        [codeSha256, clientId],
      );
      return rows[0];
    },

    async createGrant(grant: {
      id: string;
      user_id: string;
      client_id: string;
      client_name: string;
      scopes: string[];
      resource: string;
    }): Promise<void> {
      await pool.query(
        `INSERT INTO svc_oauth_grants (id, user_id, client_id, client_name, scopes, resource)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [grant.id, grant.user_id, grant.client_id, grant.client_name, grant.scopes, grant.resource],
      );
    },

    async addToken(token: { sha256: string; grantId: string; kind: 'access' | 'refresh'; ttlS: number }) {
      await pool.query(
        `INSERT INTO svc_oauth_tokens (token_sha256, grant_id, kind, expires_at)
         VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
        [token.sha256, token.grantId, token.kind, token.ttlS],
      );
    },

    /** The live access token with this digest: in time, its grant not revoked, its person still here. */
    async liveAccess(sha256: string): Promise<LiveOauthTokenRow | undefined> {
      const { rows } = await pool.query<LiveOauthTokenRow>(
        `SELECT g.id AS grant_id, g.user_id, u.name, u.email, g.client_id, g.scopes, g.resource, t.expires_at,
                (g.last_used_at IS NULL OR g.last_used_at < now() - interval '1 minute') AS stale
           FROM svc_oauth_tokens t
           JOIN svc_oauth_grants g ON g.id = t.grant_id
           JOIN svc_users u ON u.id = g.user_id
          WHERE t.token_sha256 = $1 AND t.kind = 'access' AND t.expires_at > now() AND g.revoked_at IS NULL`,
        [sha256],
      );
      return rows[0];
    },

    async touchGrant(grantId: string): Promise<void> {
      await pool.query(`UPDATE svc_oauth_grants SET last_used_at = now() WHERE id = $1`, [grantId]);
    },

    /**
     * Uses a refresh token of this client's, once (RFC 9700 4.14): the first use answers its grant; a second use of
     * the same token means it was copied, so the grant ends with every token it has ('reused').
     */
    async useRefresh(sha256: string, clientId: string): Promise<RefreshUse> {
      return withTransaction(pool, async (client) => {
        const { rows } = await client.query<{
          grant_id: string;
          used: boolean;
          scopes: string[];
          resource: string;
        }>(
          `SELECT t.grant_id, t.used_at IS NOT NULL AS used, g.scopes, g.resource
             FROM svc_oauth_tokens t JOIN svc_oauth_grants g ON g.id = t.grant_id
            WHERE t.token_sha256 = $1 AND t.kind = 'refresh' AND g.client_id = $2
              AND t.expires_at > now() AND g.revoked_at IS NULL
            FOR UPDATE OF t`,
          [sha256, clientId],
        );
        const found = rows[0];
        if (!found) return undefined;
        if (found.used) {
          await client.query(`UPDATE svc_oauth_grants SET revoked_at = now() WHERE id = $1`, [found.grant_id]);
          await client.query(`DELETE FROM svc_oauth_tokens WHERE grant_id = $1`, [found.grant_id]);
          return 'reused';
        }
        await client.query(`UPDATE svc_oauth_tokens SET used_at = now() WHERE token_sha256 = $1`, [sha256]);
        await client.query(`UPDATE svc_oauth_grants SET last_used_at = now() WHERE id = $1`, [found.grant_id]);
        return { grant_id: found.grant_id, scopes: found.scopes, resource: found.resource };
      });
    },

    /**
     * Revokes a token a client holds (RFC 7009): an access token alone; a refresh token ends its grant and every token
     * of it. A token that is not this client's, or not known, changes nothing.
     */
    async revokeToken(sha256: string, clientId: string): Promise<void> {
      await pool.query(
        `WITH found AS (
           SELECT t.token_sha256, t.kind, t.grant_id FROM svc_oauth_tokens t
             JOIN svc_oauth_grants g ON g.id = t.grant_id
            WHERE t.token_sha256 = $1 AND g.client_id = $2
         ), ended AS (
           UPDATE svc_oauth_grants SET revoked_at = COALESCE(revoked_at, now())
            WHERE id IN (SELECT grant_id FROM found WHERE kind = 'refresh')
         )
         DELETE FROM svc_oauth_tokens
          WHERE token_sha256 IN (SELECT token_sha256 FROM found)
             OR grant_id IN (SELECT grant_id FROM found WHERE kind = 'refresh')`,
        [sha256, clientId],
      );
    },

    /** Deletes what has expired: requests never finished, tokens out of time. */
    async sweep(): Promise<void> {
      await pool.query(`DELETE FROM svc_oauth_requests WHERE expires_at < now()`);
      await pool.query(`DELETE FROM svc_oauth_tokens WHERE expires_at < now()`);
    },

    /** A person's live grants, newest first. */
    async grantsOf(userId: string): Promise<McpGrant[]> {
      const { rows } = await pool.query<GrantRow>(
        `SELECT g.id, g.client_id, g.client_name, c.metadata->>'client_uri' AS client_uri, g.scopes, g.created_at,
                g.last_used_at
           FROM svc_oauth_grants g JOIN svc_oauth_clients c ON c.client_id = g.client_id
          WHERE g.user_id = $1 AND g.revoked_at IS NULL
          ORDER BY g.created_at DESC, g.id`,
        [userId],
      );
      return rows.map(toGrant);
    },

    /** Ends one of a person's grants and its tokens; false when she has no live grant by that id. */
    async revokeGrant(userId: string, id: string): Promise<boolean> {
      return withTransaction(pool, async (client) => {
        const { rowCount } = await client.query(
          `UPDATE svc_oauth_grants SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL`,
          [id, userId],
        );
        if (rowCount !== 1) return false;
        await client.query(`DELETE FROM svc_oauth_tokens WHERE grant_id = $1`, [id]);
        return true;
      });
    },
  };
}

export type OauthRepository = ReturnType<typeof oauthRepository>;
