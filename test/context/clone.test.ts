import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProjectContext, type ProjectContextOptions } from '../../src-server/context/project-context';
import { startSilentServer } from '../helpers/silent-server';

/** What is refused before git runs; clone.system.test.ts clones with git. */

const temp: string[] = [];
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
  temp.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
});

const options = (extra: Partial<ProjectContextOptions> = {}): ProjectContextOptions => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-clone-'));
  temp.push(dir);
  return { cacheDir: path.join(dir, 'repositories'), allowedRoots: [], ...extra };
};

describe('git URLs and the server’s own network', () => {
  it('refuses loopback, private and link-local hosts after resolving them, without connecting', async () => {
    const silent = await startSilentServer();
    closers.push(silent.close);
    const p = silent.port;
    for (const url of [
      `http://127.0.0.1:${p}/repo.git`,
      `http://localhost:${p}/repo.git`,
      `http://[::1]:${p}/repo.git`,
      `http://[::ffff:127.0.0.1]:${p}/repo.git`,
      `http://[::ffff:0:7f00:1]:${p}/repo.git`,
      `http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]:${p}/repo.git`,
      `http://2130706433:${p}/repo.git`,
      `http://0x7f.1:${p}/repo.git`,
      `https://169.254.169.254/latest/meta-data`,
      `git://127.0.0.1:${p}/repo.git`,
      `ssh://git@127.0.0.1:${p}/repo.git`,
      'git@127.0.0.1:team/repo.git',
    ]) {
      await expect(buildProjectContext(url, options()), url).rejects.toThrow(
        /leads to an address on the server's own network \(loopback, link-local or private\), which is not cloned: GIT_ALLOWED_HOSTS can allow /,
      );
    }
    expect(silent.connections()).toBe(0);
  });
});
