import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedDatabase } from '../../src-server/db/embedded';
import { freePort } from './ports';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * One PostgreSQL server for the whole run: TEST_DATABASE_URL when set (CI points it at
 * 127.0.0.1:5432), otherwise an embedded one in a temporary folder. Each test file then
 * creates its own database on it (see database.ts), so files run in parallel.
 */
export default async function setup(project: TestProject) {
  if (process.env.TEST_DATABASE_URL) {
    project.provide('databaseUrl', process.env.TEST_DATABASE_URL);
    return;
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-test-pg-'));
  await fs.chmod(dir, 0o755);
  const db = await startEmbeddedDatabase(dir, await freePort());
  project.provide('databaseUrl', db.url);
  return async () => {
    await db.stop();
    await fs.rm(dir, { recursive: true, force: true });
  };
}
