import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, startOidcProvider, type OidcProvider } from '../fixtures/oidc-provider';
import { freePort } from '../helpers/ports';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { test } from './studio.fixtures';

/**
 * A second server for this file's tests, configured for OIDC against a real OpenID provider running in this
 * process, on the browser tests' database; `env` adds to its settings. Both sign-in specs start one so.
 */
export function useOidcServer(env: Record<string, string>): { readonly url: string } {
  let provider: OidcProvider | undefined;
  let server: ServerProcess | undefined;

  test.beforeAll(async () => {
    const serverPort = await freePort();
    provider = await startOidcProvider(`http://127.0.0.1:${serverPort}/auth/callback`);
    server = await spawnServer({
      PORT: String(serverPort),
      DATABASE_URL: process.env.E2E_DATABASE_URL!,
      LOCAL_LLM_BASE: process.env.E2E_MODEL_URL!,
      DEFAULT_MODEL: 'fake-model',
      AUTH_ENABLED: 'true',
      OIDC_ISSUER_URL: provider.issuer,
      OIDC_CLIENT_ID,
      OIDC_CLIENT_SECRET,
      ...env,
    });
  });

  test.afterAll(async () => {
    await server?.stop();
    await provider?.close();
  });

  return {
    get url() {
      return server!.url;
    },
  };
}
