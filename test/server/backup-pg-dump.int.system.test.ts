import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database';
import { useIntegrationServer } from '../helpers/integration';
import { sourceLaunch, type ServerProcess } from '../helpers/process';
import { followAccepted, readEvents } from '../helpers/sse';

/**
 * `npm run backup` and `npm run restore` on a team's PostgreSQL (DATABASE_URL; docs/backups.md): pg_dump and
 * pg_restore of the system's PostgreSQL client tools, which must be of the server's own major version (the run's
 * PostgreSQL and its client come from the same Debian packages). A backup restores into another, empty database
 * with the same threads, runs and waiting gate; a database that is not empty is refused; and client tools of another
 * version are refused in words (stand-ins in PG_BIN_DIR that say they are PostgreSQL 9's).
 */
const ctx = useIntegrationServer({ server: false });
const root = path.resolve(import.meta.dirname, '..', '..');
const dirs: string[] = [];
const databases: TestDatabase[] = [];

afterAll(async () => {
  for (const db of databases) await db.drop();
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

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

describe("backup and restore of a team's PostgreSQL", () => {
  it('pg_dump while the server runs, pg_restore into an empty database: the same threads, runs and waiting gate', async () => {
    const archive = path.join(await tempDir('svc-dump-'), 'team.tar.gz');
    const env = ctx.env({ DATA_DIR: await tempDir('svc-dump-data-') });
    const server = await ctx.spawn({ DATA_DIR: env.DATA_DIR! });
    let runId = '';
    let threadId = '';
    let before: unknown;
    try {
      ctx.model.reply(['looks', ' fine']);
      await readEvents(
        await server.request('/graphs/review/run', { method: 'POST', json: { message: 'review this' } }),
        (event) => {
          if (event.data.type === 'run_start') [runId, threadId] = [event.data.run_id, event.data.thread_id];
          return event.data.type === 'gate_waiting';
        },
      );
      before = { threads: await json(server, '/threads'), run: await json(server, `/runs/${runId}`) };
      const backup = await command(env, ['backup', archive]);
      expect(backup.code, backup.output).toBe(0);
      expect(backup.output).toMatch(
        /backup written to .*team\.tar\.gz: pg_dump, PostgreSQL \d+, schema migration \d{4}_/,
      );
    } finally {
      await server.stop();
    }

    const target = await createTestDatabase();
    databases.push(target);
    const targetEnv = ctx.env({ DATABASE_URL: target.url, DATA_DIR: await tempDir('svc-dump-restored-') });
    const restored = await command(targetEnv, ['restore', archive]);
    expect(restored.code, restored.output).toBe(0);

    const server2 = await ctx.spawn({ DATABASE_URL: target.url, DATA_DIR: targetEnv.DATA_DIR! });
    try {
      expect({ threads: await json(server2, '/threads'), run: await json(server2, `/runs/${runId}`) }).toEqual(before);
      const resumed = await readEvents(
        await followAccepted(
          await server2.request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: {} }),
          (to) => server2.request(to),
        ),
      );
      expect(resumed.at(-1)!.data).toEqual({ type: 'run_done', run_id: runId, output: 'looks fine' });
    } finally {
      await server2.stop();
    }

    const again = await command(targetEnv, ['restore', archive]);
    expect(again.code).toBe(1);
    expect(again.output).toMatch(
      /restore not done: the database postgresql:\/\/.* is not empty \(\d+ tables\): .*--force/,
    );
  }, 90_000);

  it("refuses client tools of another major version than the server's, and never shows the password", async () => {
    const bin = await tempDir('svc-old-client-');
    for (const tool of ['pg_dump', 'pg_restore']) {
      await fs.writeFile(path.join(bin, tool), `#!/bin/sh\necho "${tool} (PostgreSQL) 9.6.24"\n`, { mode: 0o755 });
    }
    const url = new URL(ctx.db.url);
    url.password = 'a-password-never-shown';
    const env = ctx.env({ DATABASE_URL: url.toString(), PG_BIN_DIR: bin, DATA_DIR: await tempDir('svc-dump-data-') });
    const refused = await command(env, ['backup', path.join(bin, 'never.tar.gz')]);
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(
      /backup not written: pg_dump in PG_BIN_DIR \(.*\) is PostgreSQL 9's, and the database postgresql:\/\/postgres@.* runs PostgreSQL \d+: .*PG_BIN_DIR/,
    );
    expect(refused.output).not.toContain('a-password-never-shown');
    await expect(fs.access(path.join(bin, 'never.tar.gz'))).rejects.toThrow();
  });
});
