import fs from 'node:fs/promises';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startModelFake, type ModelFake } from '../fixtures/fake-models';
import { createTestDatabase, type TestDatabase } from './database';
import { writeFixtureCatalog } from './fixture-assets';
import { spawnServer, type ServerProcess } from './process';
import { startTestServer, type TestServer } from './server';

type Env = Record<string, string>;

export interface IntegrationOptions {
  /**
   * The env of the file's own server (`server`), on top of the fixture's, or a function of the fixture
   * that returns it (for values such as the model's URL); false starts none. Default `{}`: the fixture's env.
   */
  server?: Env | ((fixture: IntegrationFixture) => Env) | false;
  /** A fresh database on the run's PostgreSQL; false: the file brings its own (pass DATABASE_URL). Default true. */
  database?: boolean;
  /** The stand-in model server as LOCAL_LLM_BASE, with DEFAULT_MODEL=fake-model. Default true. */
  model?: boolean;
  /** The fixture catalog of assets as GENERATED_DIR; false: the shipped generated/ folder. Default true. */
  catalog?: boolean;
}

/** What an integration test runs against. Servers it starts are stopped by close() if the test has not. */
export interface IntegrationFixture {
  /** The fresh database, dropped at close(). */
  db: TestDatabase;
  /** The stand-in model server: script it with reply() and fail(), read what it was sent. */
  model: ModelFake;
  /** The fixture catalog's generated/ folder (see fixture-assets.ts). */
  generatedDir: string;
  /** The file's own server, started with `options.server`. */
  server: TestServer;
  /** The env naming the fixture's database, model and catalog, with `extra` on top. */
  env(extra?: Env): Env;
  /** Another in-process server on the same database, model and catalog. */
  start(extra?: Env): Promise<TestServer>;
  /** The headless server as its own process (`spawnServer`) on the same database, model and catalog. */
  spawn(extra?: Env): Promise<ServerProcess>;
  /** Closes `server` and starts it again with the same env: a restart. */
  restart(): Promise<TestServer>;
  close(): Promise<void>;
}

const absent = (what: string, option: string): never => {
  throw new Error(`this integration fixture has no ${what} (${option}: false)`);
};

export async function startIntegrationFixture(options: IntegrationOptions = {}): Promise<IntegrationFixture> {
  const { server: serverOption = {}, database = true, model: withModel = true, catalog = true } = options;
  let db: TestDatabase | undefined;
  let model: ModelFake | undefined;
  let generatedDir: string | undefined;
  let server: TestServer | undefined;
  let serverEnv: Env | undefined;
  const stops: (() => Promise<unknown>)[] = [];

  const fixture: IntegrationFixture = {
    get db() {
      return db ?? absent('database', 'database');
    },
    get model() {
      return model ?? absent('model fake', 'model');
    },
    get generatedDir() {
      return generatedDir ?? absent('fixture catalog', 'catalog');
    },
    get server() {
      return server ?? absent('server of its own', 'server');
    },
    env: (extra = {}) => ({
      ...(db && { DATABASE_URL: db.url }),
      ...(model && { LOCAL_LLM_BASE: model.url, DEFAULT_MODEL: 'fake-model' }),
      ...(generatedDir && { GENERATED_DIR: generatedDir }),
      ...extra,
    }),
    async start(extra) {
      const started = await startTestServer(db?.url ?? '', fixture.env(extra));
      // Closing twice is harmless, so close() can stop whatever a test left running.
      const close = started.close;
      let closing: Promise<void> | undefined;
      started.close = () => (closing ??= close());
      stops.push(started.close);
      return started;
    },
    async spawn(extra) {
      const started = await spawnServer(fixture.env(extra));
      stops.push(() => started.stop());
      return started;
    },
    async restart() {
      await fixture.server.close();
      server = await fixture.start(serverEnv);
      return server;
    },
    async close() {
      for (const stop of stops) await stop();
      await model?.close();
      await db?.drop();
      if (generatedDir) await fs.rm(generatedDir, { recursive: true, force: true });
    },
  };

  try {
    if (database) db = await createTestDatabase();
    if (withModel) model = await startModelFake();
    if (catalog) generatedDir = await writeFixtureCatalog();
    if (serverOption) {
      serverEnv = typeof serverOption === 'function' ? serverOption(fixture) : serverOption;
      server = await fixture.start(serverEnv);
    }
  } catch (error) {
    await fixture.close();
    throw error;
  }
  return fixture;
}

/**
 * The fixture for a test file (or a describe block): set up in beforeAll, the model's script reset
 * after each test, everything stopped in afterAll. The object it returns reads the live fixture, so
 * use it inside hooks and tests. Hooks registered after this call run after its beforeAll and, as
 * vitest runs after-hooks in reverse order, before its afterAll.
 */
export function useIntegrationServer(options: IntegrationOptions = {}): IntegrationFixture {
  let fixture: IntegrationFixture | undefined;
  beforeAll(async () => {
    fixture = await startIntegrationFixture(options);
  });
  afterEach(() => {
    if (options.model !== false) fixture?.model.reset();
  });
  afterAll(() => fixture?.close());
  return new Proxy({} as IntegrationFixture, {
    get: (_, key) => {
      if (!fixture) throw new Error('the integration fixture starts in beforeAll: use it inside hooks and tests');
      return Reflect.get(fixture, key);
    },
  });
}
