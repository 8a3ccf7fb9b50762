import type { PoolClient } from 'pg';
import { MigrationError, Umzug, type UmzugStorage } from 'umzug';
import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';
import { MIGRATIONS, type Migration } from './migrations';
import type { Pool } from './pool';
import { withAdvisoryLock } from './pool';

const log = getLogger('svc.db');

/** Same key for every process on one database: one process migrates at a time, the others wait for it. */
export const MIGRATION_LOCK_KEY = 7_305_112;

/** What the database records of each migration applied to it. */
const TABLE = 'svc_schema_migrations';

/** A database this version must not run on, or a migration that failed: the reason, in one line. */
export class SchemaError extends Error {
  override name = 'SchemaError';
}

/**
 * init_db(): brings the database's schema up to this version's (docs/upgrading.md). Under a cluster-wide advisory
 * lock, so that processes starting together apply each migration once: the first applies what is missing, the others
 * then find nothing to do. First it refuses a database that holds a migration this version does not know, unless
 * that migration says the versions before it keep working (an expand step). Each migration runs in a transaction
 * with its record, so a failed one leaves nothing of itself and the process stops with the reason.
 */
export async function initDb(pool: Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<void> {
  // The migrations run on the connection that holds the lock.
  await withAdvisoryLock(pool, MIGRATION_LOCK_KEY, (client) => migrate(client, migrations));
}

async function migrate(client: PoolClient, migrations: readonly Migration[]): Promise<void> {
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${TABLE} (
       name text PRIMARY KEY,
       compatible boolean NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now()
     )`,
  );
  // Read once: under the lock, nothing else changes the record while this process migrates.
  const done = await applied(client);
  refuseUnknown(done, migrations);

  const byName = new Map(migrations.map((m) => [m.name, m]));
  const inTransaction = (name: string) => byName.get(name)!.transaction !== false;
  const storage: UmzugStorage<PoolClient> = {
    executed: () => Promise.resolve(done.map((row) => row.name)),
    logMigration: async ({ name }) => {
      await client.query(`INSERT INTO ${TABLE} (name, compatible) VALUES ($1, $2)`, [
        name,
        byName.get(name)!.compatible,
      ]);
    },
    unlogMigration: () => Promise.reject(new Error('migrations are never reverted: restore a backup instead')),
  };
  const umzug = new Umzug<PoolClient>({
    migrations: migrations.map((m) => ({ name: m.name, up: ({ context }) => m.up(context) })),
    context: client,
    storage,
    logger: undefined,
  });
  // A migration and its record commit together: the record is written (logMigration) before `migrated`.
  let current: Migration | undefined;
  umzug.on('migrating', async ({ name }) => {
    current = byName.get(name);
    if (inTransaction(name)) await client.query('BEGIN');
  });
  umzug.on('migrated', async ({ name }) => {
    if (inTransaction(name)) await client.query('COMMIT');
    current = undefined;
    log.info(`schema migration ${name} applied`);
  });
  try {
    await umzug.up();
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (!current) throw error;
    const cause = error instanceof MigrationError ? error.cause : error;
    const left =
      current.transaction === false
        ? 'what it did before the failure stays, and it runs again at the next start'
        : 'nothing of it was applied';
    throw new SchemaError(
      `schema migration ${current.name} failed, and ${left}: ${errorMessage(cause).replace(/\s+/g, ' ')}`,
    );
  }
}

interface AppliedMigration {
  name: string;
  compatible: boolean;
}

async function applied(client: PoolClient): Promise<AppliedMigration[]> {
  const { rows } = await client.query<AppliedMigration>(`SELECT name, compatible FROM ${TABLE} ORDER BY name`);
  return rows;
}

/** A newer version's contract step (a column dropped, a function's old form removed) would break this version. */
function refuseUnknown(rows: AppliedMigration[], migrations: readonly Migration[]): void {
  const known = new Set(migrations.map((m) => m.name));
  const unknown = rows.filter((row) => !known.has(row.name));
  const breaking = unknown.find((row) => !row.compatible);
  if (breaking) {
    throw new SchemaError(
      `the database holds schema migration ${breaking.name}, which this version does not know and which is not ` +
        `compatible with the versions before it: run a version of the service that knows it (this one's newest is ` +
        `${migrations.at(-1)!.name})`,
    );
  }
  for (const row of unknown) {
    log.info(`the database holds schema migration ${row.name} of a newer version, compatible with this one`);
  }
}

/** For GET /health: whether the database answers, and the newest migration it holds. Never throws. */
export async function databaseStatus(pool: Pool): Promise<{ ok: boolean; schemaVersion: string | null }> {
  try {
    const { rows } = await pool.query<{ name: string | null }>(`SELECT max(name) AS name FROM ${TABLE}`);
    return { ok: true, schemaVersion: rows[0]?.name ?? null };
  } catch {
    return { ok: false, schemaVersion: null };
  }
}
