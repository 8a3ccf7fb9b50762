import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedDatabase } from '../../src-server/db/embedded';
import { freePort } from './ports';

export interface DatabaseServer {
  /** A connection string to the server's maintenance database. */
  url: string;
  stop(): Promise<void>;
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * The PostgreSQL server tests and benchmarks use: TEST_DATABASE_URL when set (CI points it at
 * 127.0.0.1:5432), otherwise an embedded one in a temporary folder, removed at stop.
 */
export async function startDatabaseServer(): Promise<DatabaseServer> {
  if (process.env.TEST_DATABASE_URL) return { url: process.env.TEST_DATABASE_URL, stop: async () => undefined };
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-test-pg-'));
  await fs.chmod(dir, 0o755);
  const db = await startEmbeddedDatabase(dir, await freePort());
  return {
    url: db.url,
    stop: async () => {
      await db.stop();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A fresh database on the server, named so leftovers are easy to spot. */
export async function createDatabase(serverUrl: string, prefix = 'svc_test'): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () =>
      withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}
