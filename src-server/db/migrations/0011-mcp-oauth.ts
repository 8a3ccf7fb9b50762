import type { Migration } from './migration';

/**
 * Sign-in for MCP clients (docs/mcp.md#signing-in-with-oauth): the service is an OAuth authorization server in front
 * of its OpenID provider. Clients (registered, or known by their metadata document), authorization requests on their
 * way through sign-in and consent, the grants a person gave (listed and revoked in Settings), and the grants' tokens,
 * kept by their SHA-256 only.
 */
export const mcpOauth: Migration = {
  name: '0011_mcp_oauth',
  // New tables: the release before goes on as it did (it never issues nor reads these tokens).
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_oauth_clients (
         client_id text PRIMARY KEY,
         -- 'registered' (dynamic registration) or 'metadata_document' (client_id is the document's https URL).
         kind text NOT NULL CHECK (kind IN ('registered', 'metadata_document')),
         metadata jsonb NOT NULL,
         client_secret text,
         created_at timestamptz NOT NULL DEFAULT now(),
         -- A metadata document is fetched again once this has passed.
         refresh_after timestamptz
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_oauth_requests (
         id text PRIMARY KEY,
         client_id text NOT NULL REFERENCES svc_oauth_clients(client_id) ON DELETE CASCADE,
         redirect_uri text NOT NULL,
         code_challenge text NOT NULL,
         state text,
         scopes text[] NOT NULL,
         resource text NOT NULL,
         -- Set once the person signed in; the browser that did holds the consent cookie whose digest is here.
         user_id uuid REFERENCES svc_users(id) ON DELETE CASCADE,
         consent_sha256 text,
         -- Set once she allowed it: the code the client exchanges, once.
         code_sha256 text UNIQUE,
         created_at timestamptz NOT NULL DEFAULT now(),
         expires_at timestamptz NOT NULL
       )`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_oauth_grants (
         id uuid PRIMARY KEY,
         user_id uuid NOT NULL REFERENCES svc_users(id) ON DELETE CASCADE,
         client_id text NOT NULL REFERENCES svc_oauth_clients(client_id) ON DELETE CASCADE,
         client_name text NOT NULL,
         scopes text[] NOT NULL,
         resource text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         last_used_at timestamptz,
         revoked_at timestamptz
       )`,
    );
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_oauth_grants_by_user ON svc_oauth_grants (user_id, created_at DESC)
        WHERE revoked_at IS NULL`,
    );
    await client.query(
      `CREATE TABLE IF NOT EXISTS svc_oauth_tokens (
         token_sha256 text PRIMARY KEY,
         grant_id uuid NOT NULL REFERENCES svc_oauth_grants(id) ON DELETE CASCADE,
         kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
         expires_at timestamptz NOT NULL,
         -- A refresh token is used once: its use gives the next one; a second use ends the grant (a thief or a replay).
         used_at timestamptz
       )`,
    );
    await client.query(`CREATE INDEX IF NOT EXISTS svc_oauth_tokens_by_grant ON svc_oauth_tokens (grant_id)`);
    await client.query(`CREATE INDEX IF NOT EXISTS svc_oauth_tokens_expiry ON svc_oauth_tokens (expires_at)`);
  },
};
