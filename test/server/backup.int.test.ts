import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import { freePort } from '../helpers/ports';
import { sourceLaunch, spawnServer, type ServerProcess } from '../helpers/process';
import { followAccepted, readEvents } from '../helpers/sse';

/**
 * `npm run backup` and `npm run restore` on the embedded database (docs/backups.md), as `node src-server/cli.ts
 * backup|restore` with the server's own environment: a backup taken while the server runs, with a run waiting at its
 * gate, restores into a fresh DATA_DIR with the same threads, runs and gate, and the gate then finishes its run; a
 * stopped folder's backup restores too; and a restore never replaces a database without --force, nor one a running
 * server holds.
 */
const ctx = useIntegrationServer({ server: false, database: false });
const root = path.resolve(import.meta.dirname, '..', '..');
const dirs: string[] = [];

afterAll(async () => {
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** A server's env on the embedded database in a data folder of its own. */
const embeddedEnv = async (dataDir: string) =>
  ctx.env({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()), PORT: '0', AUTH_ENABLED: 'false' });

/** `backup` or `restore` as its own process, with what the server would be started with. */
function command(env: Record<string, string>, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...sourceLaunch().args, ...args], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const json = async (server: ServerProcess, to: string) => {
  const response = await server.request(to);
  expect(response.status, to).toBe(200);
  return (await response.json()) as Record<string, unknown>;
};

/** What a restore must bring back: the threads and the two runs, as the API answers them. */
async function snapshot(server: ServerProcess, runIds: string[]) {
  return {
    threads: await json(server, '/threads'),
    runs: await Promise.all(runIds.map((id) => json(server, `/runs/${id}`))),
  };
}

let sourceDir: string;
let before: Awaited<ReturnType<typeof snapshot>>;
let runIds: string[];
let waitingThread: string;
let key: string;

describe('backup and restore of the embedded database', () => {
  it('a backup taken while the server runs restores the threads, runs and waiting gate; the gate then finishes the run', async () => {
    sourceDir = await tempDir('svc-backup-source-');
    const env = await embeddedEnv(sourceDir);
    const archive = path.join(await tempDir('svc-backups-'), 'running.tar.gz');
    const server = await spawnServer(env);
    try {
      ctx.model.reply(['all ', 'done']);
      const done = await readEvents(
        await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'sum up' } }),
      );
      expect(done.at(-1)!.data.type).toBe('run_done');
      const completedRun = (done[0]!.data as { run_id: string }).run_id;

      ctx.model.reply(['looks', ' fine']);
      let waitingRun = '';
      await readEvents(
        await server.request('/graphs/review/run', { method: 'POST', json: { message: 'review this' } }),
        (event) => {
          if (event.data.type === 'run_start') [waitingRun, waitingThread] = [event.data.run_id, event.data.thread_id];
          return event.data.type === 'gate_waiting';
        },
      );
      // A kept secret: its key is made in DATA_DIR/secrets.key, which the backup takes along.
      const secret = await server.request(`/projects/${DEFAULT_PROJECT_ID}/secrets/TRACKER_TOKEN`, {
        method: 'PUT',
        json: { value: 'a-token-kept-sealed-0123456789' },
      });
      expect(secret.status).toBe(200);
      key = await fs.readFile(path.join(sourceDir, 'secrets.key'), 'utf8');

      runIds = [completedRun, waitingRun];
      before = await snapshot(server, runIds);
      expect(before.runs.map((run) => run.status)).toEqual(['completed', 'waiting_approval']);
      expect((before.threads.items as unknown[]).length).toBe(2);

      const backup = await command(env, ['backup', archive]);
      expect(backup.code, backup.output).toBe(0);
      expect(backup.output).toContain(`while its server (pid ${server.child.pid}, ${server.url}) runs`);
      expect(backup.output).toMatch(
        /backup written to .*running\.tar\.gz: the embedded database, online, PostgreSQL 18, schema migration \d{4}_\w+, with secrets\.key/,
      );
      const password = (await fs.readFile(path.join(sourceDir, 'postgres.password'), 'utf8')).trim();
      expect(backup.output).not.toContain(password);
      // The server went on serving while it was copied.
      expect((await server.request('/health')).status).toBe(200);
    } finally {
      await server.stop();
    }

    const restoredDir = await tempDir('svc-backup-restored-');
    const restoredEnv = await embeddedEnv(restoredDir);
    const restored = await command(restoredEnv, ['restore', archive]);
    expect(restored.code, restored.output).toBe(0);
    expect(await fs.readFile(path.join(restoredDir, 'secrets.key'), 'utf8')).toBe(key);
    expect((await fs.stat(path.join(restoredDir, 'postgres'))).mode & 0o777).toBe(0o700);

    const server2 = await spawnServer(restoredEnv);
    try {
      expect(await snapshot(server2, runIds)).toEqual(before);
      const secrets = await json(server2, `/projects/${DEFAULT_PROJECT_ID}/secrets`);
      expect(JSON.stringify(secrets)).toContain('TRACKER_TOKEN');

      // Never under a running server, not even with --force.
      const refused = await command(restoredEnv, ['restore', archive, '--force']);
      expect(refused.code).toBe(1);
      expect(refused.output).toContain(`is in use by a running server (pid ${server2.child.pid}, ${server2.url})`);

      const resumed = await readEvents(
        await followAccepted(
          await server2.request(`/threads/${waitingThread}/gates/gate/approve`, {
            method: 'POST',
            json: { reason: 'after the restore' },
          }),
          (to) => server2.request(to),
        ),
      );
      expect(resumed.at(-1)!.data).toEqual({ type: 'run_done', run_id: runIds[1], output: 'looks fine' });
      expect((await json(server2, `/runs/${runIds[1]}`)).status).toBe('completed');
    } finally {
      await server2.stop();
    }

    // The folder now holds a database: replaced only with --force.
    const again = await command(restoredEnv, ['restore', archive]);
    expect(again.code).toBe(1);
    expect(again.output).toMatch(/ERROR svc\.backup restore not done: .*postgres holds a database already: .*--force/);
    expect(again.output.trim().split('\n')).toHaveLength(1);
  }, 90_000);

  it('a backup of a stopped data folder restores, and --force sets the database it replaces aside', async () => {
    const env = await embeddedEnv(sourceDir);
    const folder = path.join(await tempDir('svc-backups-'), 'stopped');
    const backup = await command(env, ['backup', folder]);
    expect(backup.code, backup.output).toBe(0);
    expect(backup.output).toContain('no server holds it, the folder is copied');
    const manifest = JSON.parse(await fs.readFile(path.join(folder, 'manifest.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest).toMatchObject({ database: 'embedded', method: 'stopped', postgres_major: 18, secrets_key: true });
    await expect(fs.stat(path.join(folder, 'postgres', 'postmaster.pid'))).rejects.toThrow();

    // Over a folder that holds a database, with --force: the one there is set aside, not deleted.
    const restoredDir = await tempDir('svc-backup-stopped-');
    const restoredEnv = await embeddedEnv(restoredDir);
    const first = await spawnServer(restoredEnv);
    await first.stop();
    const forced = await command(restoredEnv, ['restore', folder, '--force']);
    expect(forced.code, forced.output).toBe(0);
    const aside = (await fs.readdir(restoredDir)).find((name) => name.startsWith('before-restore-'));
    expect(aside).toBeDefined();
    await fs.access(path.join(restoredDir, aside!, 'postgres', 'PG_VERSION'));

    const server = await spawnServer(restoredEnv);
    try {
      const after = await snapshot(server, runIds);
      expect(after.threads).toEqual(before.threads);
      expect(after.runs[0]).toEqual(before.runs[0]);
      // The waiting run was approved on the restored copy only: here it still waits.
      expect(after.runs[1]).toEqual(before.runs[1]);
    } finally {
      await server.stop();
    }
  }, 90_000);
});
