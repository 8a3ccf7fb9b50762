import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { captureLogs } from '../log';
import { ensureFolderMode } from './data-dir';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-mode-'));
  dirs.push(dir);
  return dir;
}

const modeOf = async (dir: string) => (await fs.stat(dir)).mode & 0o7777;

describe.skipIf(process.platform === 'win32')('private folders', () => {
  it('creates a missing folder with the mode, and sets a looser existing one back to it with a log line', async () => {
    const logs: string[] = [];
    const restore = captureLogs((line) => logs.push(line));
    try {
      const created = path.join(await tempDir(), 'data', 'repositories');
      await ensureFolderMode(created, 0o700);
      expect(await modeOf(created)).toBe(0o700);
      expect(logs).toEqual([]);

      const loose = await tempDir();
      await fs.chmod(loose, 0o755);
      await ensureFolderMode(loose, 0o700);
      expect(await modeOf(loose)).toBe(0o700);
      expect(logs).toEqual([expect.stringContaining(`INFO svc.db set the mode of ${loose} to 0700 (it was 0755)`)]);
    } finally {
      restore();
    }
  });

  it('leaves a missing folder missing when asked not to create it, and a shared folder as it is', async () => {
    const missing = path.join(await tempDir(), 'repositories');
    await ensureFolderMode(missing, 0o700, { create: false });
    await expect(fs.stat(missing)).rejects.toThrow(/ENOENT/);

    const logs: string[] = [];
    const restore = captureLogs((line) => logs.push(line));
    const shared = await tempDir();
    await fs.chmod(shared, 0o1777);
    try {
      await ensureFolderMode(shared, 0o700);
    } finally {
      restore();
    }
    expect(await modeOf(shared)).toBe(0o1777);
    expect(logs).toEqual([expect.stringContaining(`WARNING svc.db ${shared} is a shared folder`)]);
  });
});
