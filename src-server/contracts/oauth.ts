import { z } from 'zod';

/*
 * Signing MCP clients in with OAuth (docs/mcp.md#signing-in-with-oauth): the service is the authorization server of
 * its own `/mcp`, in front of its OpenID provider. What the HTTP API and the studio read of it is here.
 */

/** An access token the service issued to an MCP client: recognisable by its prefix, like a personal token. */
export const OAUTH_ACCESS_PREFIX = 'svcoat_';
export const OAUTH_REFRESH_PREFIX = 'svcort_';
/** The whole form of either: its prefix, then 32 random bytes in base64url (43 characters). */
export const OAUTH_TOKEN_PATTERN = /^svco[ar]t_[A-Za-z0-9_-]{43}$/;

/**
 * The one scope: acting as the person through the MCP server, with her roles as they are at each request. Roles are
 * never put in a token, so a demotion applies at the next request.
 */
export const MCP_SCOPE = 'mcp';

/** How long an access token is good for: an hour; the client refreshes it. */
export const OAUTH_ACCESS_TTL_S = 3600;
/** How long a refresh token waits to be used: 30 days; each use gives the next one, with 30 days again. */
export const OAUTH_REFRESH_TTL_S = 30 * 24 * 3600;
/** How long a sign-in may take from the client's authorization request to the code's exchange. */
export const OAUTH_REQUEST_TTL_S = 10 * 60;

export const McpGrantSchema = z
  .object({
    id: z.uuid(),
    client_id: z.string().meta({
      description: 'the client as it named itself to the service: its metadata document URL, or a registered id',
    }),
    client_name: z.string().meta({ description: 'the name the client gave, as the consent page showed it' }),
    client_uri: z.string().nullable().meta({ description: "the client's home page, when it gave one" }),
    scopes: z.array(z.string()),
    created_at: z.string().meta({ description: 'when the person allowed it' }),
    last_used_at: z
      .string()
      .nullable()
      .meta({ description: 'when a request last came with one of its tokens, to about a minute; null if never' }),
  })
  .meta({ id: 'McpGrant' });
export type McpGrant = z.infer<typeof McpGrantSchema>;
