import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src-server/db/embedded';
import { writeFixtureCatalog } from '../helpers/fixture-assets';
import { startModelFake, type ModelFake } from '../fixtures/fake-models';
import { freePort } from '../helpers/ports';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { readEvents } from '../helpers/sse';

let model: ModelFake;
let generated: string;
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-faults-'));
  await fs.chmod(dir, 0o755);
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  model = await startModelFake();
  generated = await writeFixtureCatalog();
});
afterAll(async () => {
  await model?.close();
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

const health = async (server: ServerProcess) => {
  const res = await server.request('/health');
  return { status: res.status, body: await res.json() };
};

async function runToEnd(server: ServerProcess) {
  return readEvents(await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'after recovery' } }));
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
    server = await spawnServer({ DATABASE_URL: database.url, LOCAL_LLM_BASE: model.url, DEFAULT_MODEL: 'fake-model', GENERATED_DIR: generated });
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
    model.reply(Array.from({ length: 100 }, (_, i) => `x${i} `), 20);
    const during = readEvents(await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'during outage' } }));
    await new Promise((r) => setTimeout(r, 400));
    await database.stop();
    const events = await during.catch((error) => {
      throw new Error(`stream broke: ${error}\n${server.output().slice(-3000)}`);
    });
    expect(['run_done', 'run_error']).toContain(events.at(-1)!.data.type);
    expect((await health(server)).status).toBe(503);

    database = await startEmbeddedDatabase(dataDir, port);
    await expect.poll(async () => (await health(server)).status, { timeout: 15_000 }).toBe(200);
    model.reply(['fine', ' again']);
    const after = await runToEnd(server);
    expect(after.at(-1)!.data).toMatchObject({ type: 'run_done', output: 'fine again' });
    expect(server.child.exitCode).toBeNull();
  });
});

describe('the embedded database', () => {
  it('survives an unclean stop of the server (kill -9) with its data', async () => {
    const env = { DATA_DIR: await tempDir(), EMBEDDED_PG_PORT: String(await freePort()), LOCAL_LLM_BASE: model.url, DEFAULT_MODEL: 'fake-model', GENERATED_DIR: generated };
    let server = await spawnServer(env);
    const created = await (await server.request('/threads', { method: 'POST', json: { agent: 'summary' } })).json();
    await server.stop('SIGKILL');

    server = await spawnServer(env);
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
