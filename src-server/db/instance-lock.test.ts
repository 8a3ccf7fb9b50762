import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, lockDataDir } from './instance-lock';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-lock-'));
  dirs.push(dir);
  return dir;
}

describe('the data folder lock', () => {
  it('is held once: a second taker learns the holder’s pid, then its address once announced', async () => {
    const dir = await tempDir();
    const lock = await lockDataDir(dir);
    const starting = await lockDataDir(dir).catch((error: unknown) => error);
    expect(starting).toBeInstanceOf(DataDirInUseError);
    expect((starting as DataDirInUseError).holder).toEqual({ pid: process.pid, url: null });
    expect((starting as Error).message).toContain(`(pid ${process.pid}, still starting)`);

    lock.announce('http://127.0.0.1:8123');
    const running = (await lockDataDir(dir).catch((error: unknown) => error)) as DataDirInUseError;
    expect(running.message).toBe(
      `the data folder ${dir} is in use by another agent workflow service (pid ${process.pid}, http://127.0.0.1:8123): ` +
        'open http://127.0.0.1:8123, or set DATA_DIR to another folder, or DATABASE_URL to use a PostgreSQL of your own',
    );

    await lock.release();
    const again = await lockDataDir(dir);
    await again.release();
  });

  it('names the folder by its real path: a symbolic link to a folder in use is in use', async () => {
    const dir = await tempDir();
    const link = path.join(await tempDir(), 'link');
    await fs.symlink(dir, link);
    const lock = await lockDataDir(dir);
    await expect(lockDataDir(link)).rejects.toBeInstanceOf(DataDirInUseError);
    const other = await lockDataDir(await tempDir());
    await other.release();
    await lock.release();
  });
});
