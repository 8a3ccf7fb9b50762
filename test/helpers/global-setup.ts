import type { TestProject } from 'vitest/node';
import { startDatabaseServer } from './postgres';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/** One PostgreSQL server for the whole run; each test file then creates its own database on it. */
export default async function setup(project: TestProject) {
  const server = await startDatabaseServer();
  project.provide('databaseUrl', server.url);
  return () => server.stop();
}
