import type { Response } from 'express';
import type { OAuthServerProvider, AuthorizationParams } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type * as SdkErrors from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { McpOauthService, OauthClient } from '../../auth/mcp-oauth.service';
import { OauthRefusal } from '../../auth/oauth-refusal';
import { isDatabaseUnavailable } from '../../storage/database-unavailable';

type Errors = typeof SdkErrors;
type Client = OAuthClientInformationFull;

/** Where the person goes to sign in for a kept authorization request (http/sign-in.ts). */
export type StartSignIn = (res: Response, requestId: string) => Promise<void>;

/**
 * The SDK's authorization-server handlers (authorize, token, register, revoke) run on this provider: the service's
 * own rules (mcp-oauth.service.ts) behind the SDK's interface, their refusals turned into the SDK's OAuth errors,
 * which its handlers answer in the protocol's shape. A database that is down is `temporarily_unavailable`.
 */
export function oauthProvider(errors: Errors, service: McpOauthService, startSignIn: StartSignIn): OAuthServerProvider {
  const asOauthError = (error: unknown): unknown => {
    if (error instanceof OauthRefusal) {
      if (error.code === 'invalid_client') return new errors.InvalidClientError(error.message);
      if (error.code === 'temporarily_unavailable') return new errors.TemporarilyUnavailableError(error.message);
      return new errors.CustomOAuthError(error.code, error.message);
    }
    if (isDatabaseUnavailable(error)) {
      return new errors.TemporarilyUnavailableError('the database is unavailable: try again in a moment');
    }
    return error;
  };
  const translated =
    <A extends unknown[], R>(work: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await work(...args);
      } catch (error) {
        throw asOauthError(error);
      }
    };
  const clientOf = (client: OAuthClientInformationFull) => client as unknown as OauthClient;
  const tokensOf = (tokens: Awaited<ReturnType<McpOauthService['refresh']>>) => tokens as OAuthTokens;

  return {
    clientsStore: {
      getClient: translated(async (clientId: string) => (await service.client(clientId)) as Client | undefined),
      registerClient: translated(async (client: Omit<Client, 'client_id_issued_at'>) => {
        await service.registerClient(clientOf(client as Client));
        return client as Client;
      }),
    },
    authorize: translated(async (client: OAuthClientInformationFull, params: AuthorizationParams, res: Response) => {
      const id = await service.startRequest(clientOf(client), {
        redirectUri: params.redirectUri,
        codeChallenge: params.codeChallenge,
        state: params.state,
        scopes: params.scopes ?? [],
        resource: params.resource,
      });
      await startSignIn(res, id);
    }),
    challengeForAuthorizationCode: translated((client: OAuthClientInformationFull, code: string) =>
      service.challengeOf(clientOf(client), code),
    ),
    exchangeAuthorizationCode: translated(
      // The verifier was checked against the code's challenge by the SDK's handler (challengeForAuthorizationCode).
      async (client: Client, code: string, _verifier?: string, redirectUri?: string, resource?: URL) =>
        tokensOf(await service.exchangeCode(clientOf(client), code, redirectUri, resource)),
    ),
    exchangeRefreshToken: translated(
      async (client: OAuthClientInformationFull, refreshToken: string, scopes?: string[], resource?: URL) =>
        tokensOf(await service.refresh(clientOf(client), refreshToken, scopes, resource)),
    ),
    revokeToken: translated((client: OAuthClientInformationFull, request: { token: string }) =>
      service.revoke(clientOf(client), request.token),
    ),
    // The bearer check of /mcp is the service's authenticator (auth/authenticator.ts), not the SDK's middleware.
    verifyAccessToken: translated(async (token: string): Promise<AuthInfo> => {
      const found = await service.principalOf(token);
      if (!found) throw new errors.InvalidTokenError('invalid or expired token');
      return { token, clientId: found.clientId, scopes: found.scopes, resource: new URL(found.resource) };
    }),
  };
}
