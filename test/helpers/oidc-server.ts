import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, startOidcProvider, type OidcProvider } from '../fixtures/oidc-provider';
import type { IntegrationFixture } from './integration';
import { freePort } from './ports';
import type { TestServer } from './server';

/**
 * A server of the fixture that signs people in through a real OpenID provider: the provider first, registered with
 * the callback of the port the server then listens on. `env` is added (SESSION_SECRET at least).
 */
export async function startOidcServer(
  ctx: IntegrationFixture,
  env: Record<string, string>,
): Promise<{ provider: OidcProvider; server: TestServer }> {
  const serverPort = await freePort();
  const provider = await startOidcProvider(`http://127.0.0.1:${serverPort}/auth/callback`);
  const server = await ctx.start({
    PORT: String(serverPort),
    AUTH_ENABLED: 'true',
    OIDC_ISSUER_URL: provider.issuer,
    OIDC_CLIENT_ID,
    OIDC_CLIENT_SECRET,
    ...env,
  });
  return { provider, server };
}
