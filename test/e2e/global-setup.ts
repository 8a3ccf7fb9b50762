import { startModelFake } from '../fixtures/fake-models';
import { createDatabase, startDatabaseServer } from '../helpers/postgres';
import { spawnServer } from '../helpers/process';

export const E2E_TOKEN = 'e2e-token-0123456789abcdef';

/**
 * One server for the browser tests, with one local-runtime slot so the queue can be shown. What the
 * specs need reaches them through the environment: the server's address and database, the fake
 * runtime's address (scripted over HTTP), the token.
 */
export default async function globalSetup() {
  const databaseServer = await startDatabaseServer();
  const database = await createDatabase(databaseServer.url, 'svc_e2e');

  const model = await startModelFake();
  const server = await spawnServer({
    DATABASE_URL: database.url,
    LOCAL_LLM_BASE: model.url,
    DEFAULT_MODEL: 'fake-model',
    LOCAL_LLM_MAX_CONCURRENT: '1',
    AUTH_ENABLED: 'true',
    SVC_API_TOKEN: E2E_TOKEN,
  });
  process.env.E2E_BASE_URL = server.url;
  process.env.E2E_DATABASE_URL = database.url;
  process.env.E2E_MODEL_URL = model.url;
  process.env.E2E_TOKEN = E2E_TOKEN;

  return async () => {
    await server.stop();
    await model.close();
    await database.drop();
    await databaseServer.stop();
  };
}
