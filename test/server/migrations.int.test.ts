import { afterEach, describe, expect, it } from 'vitest';
import { RUN_TRANSITIONS } from '../../src-server/contracts/run-transitions';
import { initDb } from '../../src-server/db/migrate';
import { LATEST_MIGRATION, MIGRATIONS, type Migration } from '../../src-server/db/migrations';
import { createPool, type Pool } from '../../src-server/db/pool';
import { createTestDatabase, type TestDatabase } from '../helpers/database';
import { runServerToExit, spawnServer, type ServerProcess } from '../helpers/process';

/** Numbered migrations (docs/upgrading.md): applied once, recorded, refused when a newer version's would break this. */
const opened: { dbs: TestDatabase[]; pools: Pool[]; servers: ServerProcess[] } = { dbs: [], pools: [], servers: [] };

afterEach(async () => {
  await Promise.all(opened.servers.splice(0).map((s) => s.stop()));
  await Promise.all(opened.pools.splice(0).map((p) => p.end()));
  await Promise.all(opened.dbs.splice(0).map((d) => d.drop()));
});

async function freshDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  opened.dbs.push(db);
  return db;
}

function poolOf(db: TestDatabase): Pool {
  const pool = createPool(db.url);
  opened.pools.push(pool);
  return pool;
}

const sql = (name: string, ...statements: string[]): Migration => ({
  name,
  compatible: true,
  async up(client) {
    for (const statement of statements) await client.query(statement);
  },
});

const recorded = async (pool: Pool) =>
  (await pool.query<{ name: string }>('SELECT name FROM svc_schema_migrations ORDER BY name')).rows.map((r) => r.name);

const serverEnv = (db: TestDatabase) => ({ DATABASE_URL: db.url, LOG_LEVEL: 'INFO' });

describe('migrations', () => {
  it('are applied once each when four processes migrate an empty database at the same instant', async () => {
    const db = await freshDatabase();
    // Neither migration can run twice: a second CREATE TABLE fails, a second INSERT shows in the count.
    const once = [
      sql('0001_table', 'CREATE TABLE once_only (n integer)', 'INSERT INTO once_only VALUES (1)'),
      sql('0002_row', 'INSERT INTO once_only VALUES (2)'),
    ];
    const pools = [1, 2, 3, 4].map(() => poolOf(db));
    await Promise.all(pools.map((pool) => initDb(pool, once)));
    const { rows } = await pools[0]!.query('SELECT n FROM once_only ORDER BY n');
    expect(rows).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await recorded(pools[0]!)).toEqual(['0001_table', '0002_row']);
    // A later start finds nothing to do, and a newer list applies only what is new.
    await initDb(pools[1]!, [...once, sql('0003_more', 'INSERT INTO once_only VALUES (3)')]);
    expect((await pools[0]!.query('SELECT count(*)::int AS n FROM once_only')).rows).toEqual([{ n: 3 }]);
  });

  it("are applied by one of two server processes started together on an empty database, and /health shows the schema's version", async () => {
    const db = await freshDatabase();
    const [a, b] = await Promise.all([spawnServer(serverEnv(db)), spawnServer(serverEnv(db))]);
    opened.servers.push(a, b);
    const applied = (a.output() + b.output()).match(/schema migration \S+ applied/g) ?? [];
    expect(applied).toEqual(MIGRATIONS.map((m) => `schema migration ${m.name} applied`));
    expect(await recorded(poolOf(db))).toEqual(MIGRATIONS.map((m) => m.name));
    for (const server of [a, b]) {
      const health = await (await server.request('/health')).json();
      expect(health.schema_version).toBe(LATEST_MIGRATION);
    }
  });

  it('leave nothing of a migration that fails, and stop with the reason', async () => {
    const db = await freshDatabase();
    const pool = poolOf(db);
    const broken = sql('0002_broken', 'CREATE TABLE half_made (n integer)', 'SELECT 1 / 0');
    await expect(initDb(pool, [MIGRATIONS[0]!, broken])).rejects.toThrow(
      'schema migration 0002_broken failed, and nothing of it was applied: division by zero',
    );
    expect(await recorded(pool)).toEqual([MIGRATIONS[0]!.name]);
    const { rows } = await pool.query(`SELECT to_regclass('half_made') AS t`);
    expect(rows).toEqual([{ t: null }]);
  });

  it('run one that PostgreSQL cannot run in a transaction outside of one, when it says so', async () => {
    const db = await freshDatabase();
    const pool = poolOf(db);
    await pool.query('CREATE TABLE big (n integer)');
    const concurrently = sql('0001_index', 'CREATE INDEX CONCURRENTLY big_by_n ON big (n)');
    await expect(initDb(pool, [concurrently])).rejects.toThrow(/cannot run inside a transaction block/);
    await initDb(pool, [{ ...concurrently, transaction: false }]);
    expect(await recorded(pool)).toEqual(['0001_index']);
    expect((await pool.query(`SELECT to_regclass('big_by_n') IS NOT NULL AS made`)).rows).toEqual([{ made: true }]);
  });

  it("refuse, with one line, a database holding a newer version's migration that is not compatible with this one", async () => {
    const db = await freshDatabase();
    const pool = poolOf(db);
    await initDb(pool);
    await pool.query(`INSERT INTO svc_schema_migrations (name, compatible) VALUES ('9001_drop_a_column', false)`);
    const result = await runServerToExit(serverEnv(db));
    expect(result.code).toBe(1);
    const errors = result.output.split('\n').filter((line) => / (ERROR|CRITICAL) /.test(line));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      / ERROR svc\.api the database holds schema migration 9001_drop_a_column, which this version does not know and which is not compatible with the versions before it: run a version of the service that knows it \(this one's newest is \d{4}_\w+\)$/,
    );
    expect(result.output).not.toMatch(/\n\s+at /);
  });

  it("start on a database holding a newer version's migration that declares itself compatible", async () => {
    const db = await freshDatabase();
    const pool = poolOf(db);
    await initDb(pool);
    await pool.query(`INSERT INTO svc_schema_migrations (name, compatible) VALUES ('9001_add_a_table', true)`);
    const server = await spawnServer(serverEnv(db));
    opened.servers.push(server);
    expect(server.output()).toContain('the database holds schema migration 9001_add_a_table of a newer version');
    const health = await (await server.request('/health')).json();
    expect(health).toMatchObject({ status: 'ok', schema_version: '9001_add_a_table' });
  });
});

describe('the database functions', () => {
  it('have one form each, on a new database and on one an older version made', async () => {
    const db = await freshDatabase();
    const pool = poolOf(db);
    await initDb(pool);
    const overloaded = `SELECT p.proname, count(*)::int AS forms FROM pg_proc p
                          JOIN pg_namespace n ON n.oid = p.pronamespace
                         WHERE n.nspname = 'public' AND p.proname LIKE 'svc\\_%'
                         GROUP BY p.proname HAVING count(*) > 1`;
    expect((await pool.query(overloaded)).rows).toEqual([]);
    // The forms older versions made under other signatures, then the upgrade.
    await pool.query(`CREATE FUNCTION svc_llm_leave(bigint, integer, double precision, boolean)
                      RETURNS TABLE (waiting integer, active integer) LANGUAGE sql AS 'SELECT 0, 0'`);
    await pool.query(`CREATE FUNCTION svc_start_run(uuid, uuid, boolean, uuid, text, text, text, text, uuid, text,
                        double precision, integer, jsonb, boolean, integer)
                      RETURNS void LANGUAGE sql AS 'SELECT'`);
    await pool.query('DROP TABLE svc_schema_migrations');
    await initDb(pool);
    expect((await pool.query(overloaded)).rows).toEqual([]);
  });

  it("change a run's status only as contracts/run-transitions.ts allows", async () => {
    const db = await freshDatabase();
    const pool = poolOf(db);
    await initDb(pool);
    const { rows } = await pool.query<{ name: string; source: string }>(
      `SELECT p.proname AS name, pg_get_functiondef(p.oid) AS source FROM pg_proc p
         JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proname LIKE 'svc\\_%'`,
    );
    const found: { fn: string; from: string[] | null; to: string }[] = [];
    for (const { name, source } of rows) {
      for (const statement of source.split(';')) {
        const update = /UPDATE svc_runs SET status = '(\w+)'[\s\S]*?WHERE[\s\S]*?status IN \(([^)]*)\)/.exec(statement);
        if (/UPDATE svc_runs SET status/.test(statement)) {
          expect(update, `${name} changes a status without a guard: ${statement}`).not.toBeNull();
          found.push({
            fn: name,
            from: update![2]!.split(',').map((s) => s.trim().replaceAll("'", '')),
            to: update![1]!,
          });
        }
        const insert = /INSERT INTO svc_runs \(([^)]*)\)\s*VALUES \(([\s\S]*)\)/.exec(statement);
        if (insert) {
          const columns = insert[1]!.split(',').map((c) => c.trim());
          const values = splitValues(insert[2]!);
          found.push({ fn: name, from: null, to: values[columns.indexOf('status')]!.replaceAll("'", '') });
        }
      }
    }
    const allowed = Object.entries(RUN_TRANSITIONS).map(([transition, t]) => ({
      transition,
      from: t.from ? [...t.from].sort() : null,
      to: t.to,
    }));
    const named = found.map(({ fn, from, to }) => {
      const match = allowed.find((t) => t.to === to && JSON.stringify(t.from) === JSON.stringify(from?.sort() ?? null));
      return `${fn}: ${match?.transition ?? `${JSON.stringify(from)} → ${to} (in no transition)`}`;
    });
    // svc_start_run is the release before's (migration 0003 keeps it for that release), svc_start_agent_run this one's.
    expect(named.sort()).toEqual([
      'svc_cancel_run: cancel',
      'svc_start_agent_run: enqueue',
      'svc_start_agent_run: start',
      'svc_start_run: enqueue',
      'svc_start_run: start',
    ]);
  });
});

/** The values of an INSERT's VALUES list, split at the commas outside parentheses. */
function splitValues(text: string): string[] {
  const values: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      values.push(current.trim());
      current = '';
    } else current += ch;
  }
  values.push(current.trim());
  return values;
}
