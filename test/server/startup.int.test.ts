import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPool } from '../../src-server/db/pool';
import { initDb } from '../../src-server/db/schema';
import { useIntegrationServer } from '../helpers/integration';
import { freePort } from '../helpers/ports';
import { startTestServer } from '../helpers/server';

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

describe('startup', () => {
  const ctx = useIntegrationServer({ server: false, model: false, catalog: false });

  it('creates the checkpointer schema graph_checkpoints and every svc table', async () => {
    const server = await ctx.start();
    await server.close();
    const client = new pg.Client({ connectionString: ctx.db.url });
    await client.connect();
    const tables = await client.query(
      `SELECT to_regclass('graph_checkpoints.checkpoints')::text AS checkpoints, to_regclass('public.svc_runs')::text AS runs`,
    );
    await client.end();
    expect(tables.rows[0]).toEqual({ checkpoints: 'graph_checkpoints.checkpoints', runs: 'svc_runs' });
  });

  it('closes running runs older than an hour as error and leaves younger ones alone', async () => {
    let server = await ctx.start();
    const thread = randomUUID();
    const old = randomUUID();
    const young = randomUUID();
    await server.pool.query(`INSERT INTO svc_threads (id, agent) VALUES ($1, 'demo')`, [thread]);
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
      await server.pool.query(`INSERT INTO svc_threads (id, agent) VALUES ($1, 'kept')`, [thread]);
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
