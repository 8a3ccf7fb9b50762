import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src-server/db/embedded';
import { useIntegrationServer } from '../helpers/integration';
import { freePort } from '../helpers/ports';
import type { ServerProcess } from '../helpers/process';
import { readEvents } from '../helpers/sse';

// Each test runs its own PostgreSQL, to stop and start it.
const ctx = useIntegrationServer({ server: false, database: false });
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-faults-'));
  await fs.chmod(dir, 0o755);
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

const health = async (server: ServerProcess) => {
  const res = await server.request('/health');
  return { status: res.status, body: await res.json() };
};

async function runToEnd(server: ServerProcess) {
  return readEvents(
    await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'after recovery' } }),
  );
}

describe('PostgreSQL restarts', () => {
  let database: EmbeddedDatabase;
  let server: ServerProcess;
  let dataDir: string;
  let port: number;

  beforeAll(async () => {
    dataDir = await tempDir();
    port = await freePort();
    database = await startEmbeddedDatabase(dataDir, port);
    server = await ctx.spawn({ DATABASE_URL: database.url });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.stop();
  });

  it('while idle: /health reports the fault, the server keeps answering, and runs succeed after recovery', async () => {
    expect((await health(server)).status).toBe(200);
    await database.stop();
    const down = await health(server);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ status: 'degraded', database: { ok: false } });
    expect((await server.request('/agents')).status).toBe(200);

    database = await startEmbeddedDatabase(dataDir, port);
    await expect.poll(async () => (await health(server)).status, { timeout: 15_000 }).toBe(200);
    const events = await runToEnd(server);
    expect(events.at(-1)!.data.type).toBe('run_done');
  });

  it('during a run: the server survives and runs started after recovery succeed', async () => {
    ctx.model.reply(
      Array.from({ length: 100 }, (_, i) => `x${i} `),
      20,
    );
    const during = readEvents(
      await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'during outage' } }),
    );
    await new Promise((r) => setTimeout(r, 400));
    await database.stop();
    const events = await during.catch((error) => {
      throw new Error(`stream broke: ${error}\n${server.output().slice(-3000)}`);
    });
    expect(['run_done', 'run_error']).toContain(events.at(-1)!.data.type);
    expect((await health(server)).status).toBe(503);

    database = await startEmbeddedDatabase(dataDir, port);
    await expect.poll(async () => (await health(server)).status, { timeout: 15_000 }).toBe(200);
    ctx.model.reply(['fine', ' again']);
    const after = await runToEnd(server);
    expect(after.at(-1)!.data).toMatchObject({ type: 'run_done', output: 'fine again' });
    expect(server.child.exitCode).toBeNull();
  });
});

describe('the embedded database', () => {
  it('survives an unclean stop of the server (kill -9) with its data', async () => {
    const env = { DATA_DIR: await tempDir(), EMBEDDED_PG_PORT: String(await freePort()) };
    let server = await ctx.spawn(env);
    const created = await (await server.request('/threads', { method: 'POST', json: { agent: 'summary' } })).json();
    await server.stop('SIGKILL');

    server = await ctx.spawn(env);
    try {
      expect(server.output()).toContain('stopping PostgreSQL left running by an earlier process');
      const thread = await server.request(`/threads/${created.id}`);
      expect(thread.status).toBe(200);
      expect((await health(server)).body.database.ok).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
