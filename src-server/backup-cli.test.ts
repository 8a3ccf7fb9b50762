import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runBackupCommand } from './backup-cli';
import { loadConfig } from './config';
import { captureLogs } from './log';

const config = loadConfig({ DATA_DIR: path.join(os.tmpdir(), 'backup-cli-test-data') });
let lines: string[] = [];
let restore: (() => void) | undefined;

afterEach(() => {
  restore?.();
  lines = [];
});

async function run(command: 'backup' | 'restore', args: string[], env: NodeJS.ProcessEnv = {}) {
  restore = captureLogs((line) => lines.push(line.trim()));
  const code = await runBackupCommand(command, args, config, env);
  restore();
  restore = undefined;
  return code;
}

describe('npm run backup and npm run restore, their command line', () => {
  it('answers 2 with the usage for a missing or extra name, or an option it does not know', async () => {
    expect(await run('backup', [])).toBe(2);
    expect(lines).toEqual([expect.stringMatching(/ ERROR svc\.backup usage: npm run backup -- <target>: /)]);
    lines = [];
    expect(await run('backup', ['a.tar.gz', '--force'])).toBe(2);
    expect(lines).toEqual([expect.stringMatching(/ ERROR svc\.backup unknown option --force; usage: /)]);
    lines = [];
    expect(await run('restore', ['a', 'b'])).toBe(2);
    expect(lines).toEqual([expect.stringMatching(/usage: npm run restore -- <backup> \[--force\]/)]);
  });

  it('answers 0 with the usage for --help', async () => {
    expect(await run('restore', ['--help'])).toBe(0);
    expect(lines).toEqual([expect.stringMatching(/ INFO svc\.backup usage: npm run restore -- /)]);
  });

  it('takes a relative name from the folder npm was started in, and refuses in one line', async () => {
    const started = path.join(os.tmpdir(), 'where-npm-ran');
    const code = await run('restore', ['missing.tar.gz'], { npm_lifecycle_event: 'restore', INIT_CWD: started });
    expect(code).toBe(1);
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          ` ERROR svc\\.backup restore not done: there is no backup at ${path.join(started, 'missing.tar.gz')}$`,
        ),
      ),
    ]);
  });
});
