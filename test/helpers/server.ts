import { loadConfig } from '../../src-server/config';
import { captureLogs } from '../../src-server/log';
import { startServer, type RunningServer } from '../../src-server/main';
import { registerServer } from './contract';
import { requestServer, type TestRequestInit } from './request';

export interface TestServer extends RunningServer {
  /** Log lines written since start. */
  logs: string[];
  /** fetch against the server, with the bearer token when one is set. */
  request(path: string, init?: TestRequestInit): Promise<Response>;
}

/**
 * The real server, in-process, over real HTTP on a free loopback port. Authentication is off unless
 * the test's env turns it on.
 */
export async function startTestServer(
  databaseUrl: string,
  env: Record<string, string> = {},
  options: { generatedDir?: string } = {},
): Promise<TestServer> {
  const logs: string[] = [];
  const restore = captureLogs((line) => logs.push(line));
  // RATE_LIMIT_PER_MINUTE: tests poll far above a person's rate (see process.ts); a test of the limits sets its own.
  const config = loadConfig({
    PORT: '0',
    AUTH_ENABLED: 'false',
    LOG_LEVEL: 'INFO',
    RATE_LIMIT_PER_MINUTE: '0',
    DATABASE_URL: databaseUrl,
    ...env,
  });
  let server: RunningServer;
  try {
    server = await startServer({ config, generatedDir: options.generatedDir });
  } catch (error) {
    restore();
    throw error;
  }
  const token = env.SVC_API_TOKEN ?? server.apiToken;
  // Every answer of this server is checked against the OpenAPI document it serves (contract.ts).
  const contract = registerServer(server.url);
  return {
    ...server,
    logs,
    async close() {
      await server.close();
      contract.stop();
      restore();
    },
    request: (path, init) => requestServer(server.url, path, init, token),
  };
}
