import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPool } from '../../src-server/db/pool';
import { initDb } from '../../src-server/db/migrate';
import { useIntegrationServer } from '../helpers/integration';
import { freePort } from '../helpers/ports';
import { startTestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';

const root = path.resolve(import.meta.dirname, '..', '..');

async function schemaSnapshot(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const columns = await client.query(
    `SELECT table_schema, table_name, column_name, data_type, is_nullable, column_default
       FROM information_schema.columns WHERE table_schema IN ('public', 'graph_checkpoints')
      ORDER BY 1, 2, 3`,
  );
  const indexes = await client.query(
    `SELECT schemaname, indexname, indexdef FROM pg_indexes WHERE schemaname IN ('public', 'graph_checkpoints') ORDER BY 1, 2`,
  );
  await client.end();
  return JSON.stringify([columns.rows, indexes.rows]);
}

describe('init_db', () => {
  const ctx = useIntegrationServer({ server: false, model: false, catalog: false });

  it('is safe from two processes at once and changes nothing when run again', async () => {
    const a = createPool(ctx.db.url);
    const b = createPool(ctx.db.url);
    await Promise.all([initDb(a), initDb(b)]);
    const first = await schemaSnapshot(ctx.db.url);
    expect(first).toContain('svc_threads');
    for (const table of [
      'svc_runs',
      'svc_run_nodes',
      'svc_node_configs',
      'svc_users',
      'svc_orgs',
      'svc_teams',
      'svc_projects',
      'svc_memberships',
    ]) {
      expect(first).toContain(`"${table}"`);
    }
    await initDb(a);
    expect(await schemaSnapshot(ctx.db.url)).toBe(first);
    await Promise.all([a.end(), b.end()]);
  });
});

describe('rows written by older versions', () => {
  const ctx = useIntegrationServer({ server: false, model: false, catalog: false });

  it('are upgraded once by init_db: threads get a project, decisions and gates their shape, node rows their keys', async () => {
    const pool = createPool(ctx.db.url);
    try {
      await initDb(pool);
      // The state an older version left: a thread of no project, a run resuming a decision of the old shape, a gate
      // paused before gates had options, node rows without keys.
      await pool.query(`ALTER TABLE svc_threads ALTER COLUMN project_id DROP NOT NULL`);
      const [thread, resuming, waiting] = [randomUUID(), randomUUID(), randomUUID()];
      await pool.query(`INSERT INTO svc_threads (id, agent) VALUES ($1, 'review')`, [thread]);
      await pool.query(
        `INSERT INTO svc_runs (id, thread_id, agent, status, resume_decision, pending_gate) VALUES
           ($1, $3, 'review', 'running', '{"approved": true, "reason": "fine", "by": ["Ann"]}', NULL),
           ($2, $3, 'review', 'waiting_approval', NULL,
            '{"node": "gate", "question": "Publish?", "required_context": [], "context": {}}')`,
        [resuming, waiting, thread],
      );
      await pool.query(
        `INSERT INTO svc_run_nodes (run_id, node_id, status, entered_at) VALUES
           ($1, 'analysis', 'completed', 1), ($1, 'gate', 'completed', 2), ($1, 'analysis', 'completed', 3),
           ($1, 'gate', 'waiting_approval', 4)`,
        [waiting],
      );
      await pool.query(`UPDATE svc_run_nodes SET key = NULL`);
      // Versions before numbered migrations kept no record of them.
      await pool.query(`DROP TABLE svc_schema_migrations`);

      await initDb(pool);
      const threads = await pool.query(`SELECT project_id FROM svc_threads WHERE id = $1`, [thread]);
      expect(threads.rows).toEqual([{ project_id: DEFAULT_PROJECT_ID }]);
      await expect(pool.query(`INSERT INTO svc_threads (id, agent) VALUES ($1, 'x')`, [randomUUID()])).rejects.toThrow(
        /not-null/,
      );
      const runs = await pool.query(`SELECT id, resume_decision, pending_gate FROM svc_runs ORDER BY id = $1 DESC`, [
        resuming,
      ]);
      expect(runs.rows[0].resume_decision).toEqual({
        decision: { kind: 'approve', reason: 'fine', deciders: ['Ann'] },
        checkpointId: null,
      });
      expect(runs.rows[1].pending_gate).toMatchObject({ decide_role: 'member', approvals_needed: 1, on_expiry: null });
      const keys = await pool.query(`SELECT key FROM svc_run_nodes WHERE run_id = $1 ORDER BY id`, [waiting]);
      expect(keys.rows.map((r) => r.key)).toEqual(['analysis#1', 'gate#1', 'analysis#2', 'gate#2']);

      // Once: upgraded rows are left as they are.
      const before = await pool.query(`SELECT resume_decision, pending_gate FROM svc_runs ORDER BY id`);
      await initDb(pool);
      expect((await pool.query(`SELECT resume_decision, pending_gate FROM svc_runs ORDER BY id`)).rows).toEqual(
        before.rows,
      );
    } finally {
      await pool.end();
    }
  });
});

describe('startup', () => {
  const ctx = useIntegrationServer({ server: false, model: false, catalog: false });

  it("creates the checkpointer's tables in graph_checkpoints and a table for each resource the service keeps", async () => {
    const server = await ctx.start();
    await server.close();
    const client = new pg.Client({ connectionString: ctx.db.url });
    await client.connect();
    const tables = await client.query<{ name: string }>(
      `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
        WHERE table_schema IN ('graph_checkpoints', 'public')`,
    );
    await client.end();
    const resources = [
      'threads',
      'runs',
      'run_nodes',
      'node_configs',
      'users',
      'orgs',
      'teams',
      'projects',
      'memberships',
    ];
    expect(tables.rows.map((row) => row.name)).toEqual(
      expect.arrayContaining([
        ...['checkpoints', 'checkpoint_blobs', 'checkpoint_writes'].map((table) => `graph_checkpoints.${table}`),
        ...resources.map((resource) => `public.svc_${resource}`),
      ]),
    );
  });

  it('closes running runs older than an hour as error and leaves younger ones alone', async () => {
    let server = await ctx.start();
    const thread = randomUUID();
    const old = randomUUID();
    const young = randomUUID();
    await server.pool.query(`INSERT INTO svc_threads (id, agent, project_id) VALUES ($1, 'demo', $2)`, [
      thread,
      DEFAULT_PROJECT_ID,
    ]);
    await server.pool.query(
      `INSERT INTO svc_runs (id, thread_id, agent, status, started_at) VALUES
         ($1, $3, 'demo', 'running', now() - interval '2 hours'),
         ($2, $3, 'demo', 'running', now() - interval '10 minutes')`,
      [old, young, thread],
    );
    await server.pool.query(
      `INSERT INTO svc_run_nodes (run_id, node_id, status, entered_at) VALUES ($1, 'analysis', 'running', extract(epoch FROM now()))`,
      [old],
    );
    await server.close();

    server = await ctx.start();
    const runs = await server.pool.query(`SELECT id, status, error_detail FROM svc_runs ORDER BY started_at`);
    expect(runs.rows).toEqual([
      { id: old, status: 'error', error_detail: expect.stringMatching(/^OrphanedRunError: /) },
      { id: young, status: 'running', error_detail: null },
    ]);
    const nodes = await server.pool.query(`SELECT status, exited_at FROM svc_run_nodes WHERE run_id = $1`, [old]);
    expect(nodes.rows[0].status).toBe('error');
    expect(nodes.rows[0].exited_at).toBeGreaterThan(0);
    expect(server.logs.some((l) => l.includes('closed 1 orphaned run(s)'))).toBe(true);
    // Its stream ends where it ended: the sweep stores its run_error with the status.
    const stream = await readEvents(await server.request(`/runs/${old}/stream`));
    expect(stream.map((e) => e.data)).toEqual([
      { type: 'run_error', run_id: old, error_detail: expect.stringMatching(/^OrphanedRunError: /) },
    ]);
    await server.close();
  });

  it('logs the studio link with a generated token when auth is on and nothing is configured', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true' });
    expect(server.apiToken).toMatch(/^[\w-]{20,}$/);
    const link = server.logs.find((l) => l.includes(' INFO svc.api studio: '));
    expect(link).toContain(`${server.url}/ui#token=${server.apiToken}`);
    const unauthorized = await fetch(`${server.url}/agents`);
    expect(unauthorized.status).toBe(401);
    expect((await server.request('/agents')).status).toBe(200);
    expect(server.logs.some((l) => l.includes('SESSION_SECRET is the insecure placeholder'))).toBe(true);
    await server.close();
  });

  it('generates no token when SVC_API_TOKEN is set, and never logs that token', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true', SVC_API_TOKEN: 'configured-token-abcdef' });
    expect(server.apiToken).toBeUndefined();
    expect(server.logs.join('')).not.toContain('configured-token-abcdef');
    expect(server.logs.some((l) => l.includes(`studio: ${server.url}/ui\n`))).toBe(true);
    await server.close();
  });
});

function runCli(env: Record<string, string>, until: RegExp, timeoutMs = 20_000) {
  return new Promise<{ code: number | null; output: string; ms: number }>((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src-server/cli.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (until.test(output)) child.kill('SIGTERM');
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, ms: Date.now() - started });
    });
  });
}

describe('the headless process', () => {
  it('logs "checkpointer setup failed" and exits non-zero when the database is unreachable', async () => {
    const port = await freePort();
    const result = await runCli({ DATABASE_URL: `postgresql://postgres@127.0.0.1:${port}/nowhere`, PORT: '0' }, /$^/);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.output).toMatch(/ ERROR svc\.api checkpointer setup failed: .*ECONNREFUSED|connect/);
    expect(result.ms).toBeLessThan(10_000);
  });

  it('stops with a message naming the variable when a value is wrong', async () => {
    const result = await runCli({ PORT: 'eighty' }, /$^/);
    expect(result.code).toBe(2);
    expect(result.output).toMatch(/ERROR svc\.api invalid configuration: PORT: /);
  });

  it('refuses to start with one line asking for OIDC_REDIRECT_URI when OIDC is on and HOST is a wildcard', async () => {
    for (const host of ['0.0.0.0', '::']) {
      const result = await runCli(
        {
          HOST: host,
          PORT: '0',
          AUTH_ENABLED: 'true',
          OIDC_ISSUER_URL: 'http://127.0.0.1:9/',
          OIDC_CLIENT_ID: 'svc',
          SESSION_SECRET: 'session-secret-for-the-startup-test-0123',
        },
        /$^/,
      );
      expect(result.code).toBe(1);
      const lines = result.output.trim().split('\n');
      expect(lines).toEqual([
        expect.stringMatching(
          new RegExp(
            ` ERROR svc\\.api OIDC_REDIRECT_URI is required when HOST is ${host.replace(/\./g, '\\.')}: set it to `,
          ),
        ),
      ]);
    }
  });

  it('keeps its embedded database between starts and stops it on SIGTERM', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-embedded-'));
    await fs.chmod(dataDir, 0o755);
    const pgPort = await freePort();
    const env = { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), PORT: '0', AUTH_ENABLED: 'false' };
    try {
      const first = await runCli(env, /listening on/, 60_000);
      expect(first.output).toContain(`embedded PostgreSQL ready on 127.0.0.1:${pgPort}`);
      expect(first.code).toBe(0);

      const password = (await fs.readFile(path.join(dataDir, 'postgres.password'), 'utf8')).trim();
      const url = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/agent_workflow`;
      // Stopped on SIGTERM: nothing listens on its port any more.
      await expect(new pg.Client({ connectionString: url }).connect()).rejects.toThrow();

      const second = await runCli(env, /listening on/, 60_000);
      expect(second.output).not.toContain('initialising embedded PostgreSQL');
      expect(second.code).toBe(0);

      // Data written through one start is there at the next.
      const thread = randomUUID();
      let server = await startTestServer('', env);
      await server.pool.query(`INSERT INTO svc_threads (id, agent, project_id) VALUES ($1, 'kept', $2)`, [
        thread,
        DEFAULT_PROJECT_ID,
      ]);
      await server.close();
      server = await startTestServer('', env);
      const kept = await server.pool.query(`SELECT agent FROM svc_threads WHERE id = $1`, [thread]);
      expect(kept.rows).toEqual([{ agent: 'kept' }]);
      await server.close();
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  });
});
