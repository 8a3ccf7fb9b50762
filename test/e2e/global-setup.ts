import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedDatabase } from '../../src-server/db/embedded';
import { startModelFake } from '../fixtures/fake-models';
import { freePort } from '../helpers/ports';
import { spawnServer } from '../helpers/process';

export const E2E_TOKEN = 'e2e-token-0123456789abcdef';

/**
 * One server for the browser tests, with one local-runtime slot so the queue can be shown. What the
 * specs need reaches them through the environment: the server's address and database, the fake
 * runtime's address (scripted over HTTP), the token.
 */
export default async function globalSetup() {
  let serverUrl = process.env.TEST_DATABASE_URL;
  let stopDatabase = async (): Promise<void> => undefined;
  if (!serverUrl) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-pg-'));
    await fs.chmod(dir, 0o755);
    const db = await startEmbeddedDatabase(dir, await freePort());
    serverUrl = db.url;
    stopDatabase = async () => {
      await db.stop();
      await fs.rm(dir, { recursive: true, force: true });
    };
  }
  const name = `svc_e2e_${Date.now()}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;

  const model = await startModelFake();
  const server = await spawnServer({
    DATABASE_URL: url.toString(),
    LOCAL_LLM_BASE: model.url,
    DEFAULT_MODEL: 'fake-model',
    LOCAL_LLM_MAX_CONCURRENT: '1',
    AUTH_ENABLED: 'true',
    SVC_API_TOKEN: E2E_TOKEN,
  });
  process.env.E2E_BASE_URL = server.url;
  process.env.E2E_DATABASE_URL = url.toString();
  process.env.E2E_MODEL_URL = model.url;
  process.env.E2E_TOKEN = E2E_TOKEN;

  return async () => {
    await server.stop();
    await model.close();
    const cleanup = new pg.Client({ connectionString: serverUrl });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await cleanup.end();
    await stopDatabase();
  };
}
