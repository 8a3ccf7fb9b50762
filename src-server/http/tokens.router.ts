import { z } from 'zod';
import {
  CreatedPersonalTokenSchema,
  CreatePersonalTokenSchema,
  PERSONAL_TOKEN_PREFIX,
  PersonalTokenSchema,
} from '../contracts/auth';
import { UuidSchema } from '../contracts/common';
import { McpGrantSchema } from '../contracts/oauth';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });
const AUTH_OFF = 'authentication is off (AUTH_ENABLED=false): no token is needed (conflict)';

/** The request's own credential is a personal access token (the bearer decides whom a request is from). */
const sentPersonalToken = (authorization: string | undefined) =>
  new RegExp(`^Bearer\\s+${PERSONAL_TOKEN_PREFIX}`, 'i').test(authorization ?? '');

/** GET/POST /me/tokens and POST /me/tokens/{id}/revoke: the caller's own personal access tokens. */
export function tokenRoutes(api: Api, { personalTokens, mcpGrants }: AppDeps): void {
  const tag = 'auth';
  api.route({
    method: 'get',
    path: '/me/tokens',
    operationId: 'listPersonalTokens',
    tag,
    summary: "The caller's own live personal access tokens, newest first, without their secrets",
    errors: { 409: AUTH_OFF },
    responses: { 200: { description: 'her tokens', schema: z.array(PersonalTokenSchema) } },
    handler: ({ ctx }) => personalTokens.list(ctx.principal),
  });

  api.route({
    method: 'post',
    path: '/me/tokens',
    operationId: 'createPersonalToken',
    tag,
    summary:
      'Create a personal access token that acts with the caller’s own roles until revoked; the answer shows it, once',
    body: CreatePersonalTokenSchema,
    errors: {
      403: 'the request came with a personal access token, which cannot create another (forbidden)',
      409: `the caller already has the most live tokens one person may hold (conflict); or ${AUTH_OFF}`,
    },
    responses: {
      201: { description: 'created; `token` is not shown again', schema: CreatedPersonalTokenSchema },
    },
    handler: async ({ body, ctx, req, res }) => {
      const created = await personalTokens.create(ctx.principal, body, sentPersonalToken(req.headers.authorization));
      // A credential: no cache keeps it.
      res.setHeader('Cache-Control', 'no-store');
      return created;
    },
  });

  api.route({
    method: 'post',
    path: '/me/tokens/{id}/revoke',
    operationId: 'revokePersonalToken',
    tag,
    summary: 'Revoke one of the caller’s own personal access tokens: from now on it answers 401',
    params: IdParams,
    errors: { 404: "no token of the caller's has this id (not_found)", 409: AUTH_OFF },
    responses: { 204: { description: 'revoked (or already was)' } },
    handler: async ({ params, ctx }) => {
      await personalTokens.revoke(ctx.principal, params.id);
    },
  });

  api.route({
    method: 'get',
    path: '/me/mcp-grants',
    operationId: 'listMcpGrants',
    tag,
    summary: 'The MCP clients the caller signed in with OAuth (docs/mcp.md#signing-in-with-oauth), newest first',
    responses: {
      200: { description: 'her live sign-ins; none for a caller who is not a person', schema: z.array(McpGrantSchema) },
    },
    handler: ({ ctx }) => mcpGrants.grants(ctx.principal),
  });

  api.route({
    method: 'post',
    path: '/me/mcp-grants/{id}/revoke',
    operationId: 'revokeMcpGrant',
    tag,
    summary: "Sign an MCP client out: every token of the caller's grant answers 401 from now on",
    params: IdParams,
    errors: { 404: "no live sign-in of the caller's has this id (not_found)" },
    responses: { 204: { description: 'revoked' } },
    handler: async ({ params, ctx }) => {
      await mcpGrants.revokeGrant(ctx.principal, params.id);
    },
  });
}
