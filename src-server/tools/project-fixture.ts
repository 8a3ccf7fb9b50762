import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { callProjectTool, type ProjectToolsOptions } from './project-tools';

export { useFolders } from '../context/folder-fixture';

/**
 * Project folders and tool calls for the project tools' tests: project-tools.test.ts (files, no git) and
 * project-tools.system.test.ts (git, which only the system suite may count on).
 */

export function write(dir: string, file: string, text: string | Buffer) {
  fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  fs.writeFileSync(path.join(dir, file), text);
}

/** The files of the test project: README.md, src/app.ts and docs/guide.md, as its second commit leaves them. */
export function projectFiles(dir: string): string {
  write(dir, 'README.md', '# Widgets\nThey make widgets.\n');
  write(dir, 'src/app.ts', 'export const answer = 42;\n');
  write(dir, 'docs/guide.md', 'How to use the widgets.\n');
  return dir;
}

export const call = (
  root: string,
  tool: string,
  args: Record<string, unknown>,
  options: Partial<ProjectToolsOptions> = {},
) => callProjectTool({ root, writable: true, timeoutMs: 10_000, ...options }, tool, args, new AbortController().signal);

/** The text of a call that must succeed. */
export async function ok(
  root: string,
  tool: string,
  args: Record<string, unknown>,
  options?: Partial<ProjectToolsOptions>,
) {
  const result = await call(root, tool, args, options);
  expect(result.is_error, result.text).toBe(false);
  return result.text;
}

/** The message of a call that must fail. */
export async function refused(
  root: string,
  tool: string,
  args: Record<string, unknown>,
  options?: Partial<ProjectToolsOptions>,
) {
  const result = await call(root, tool, args, options);
  expect(result.is_error, result.text).toBe(true);
  return result.text;
}

const GIT_ENV = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };

/** The test's own git: no configuration of the machine it runs on. */
export function git(dir: string, ...args: string[]): string {
  const identity = ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main'];
  return execFileSync('git', [...identity, '-c', 'commit.gpgsign=false', ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: GIT_ENV,
    stdio: 'pipe',
  });
}

export function commitAll(dir: string, message: string, date = '2024-03-01T12:00:00Z') {
  git(dir, 'add', '-A');
  execFileSync('git', ['-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', 'commit', '-q', '-m', message], {
    cwd: dir,
    env: { ...GIT_ENV, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date },
  });
}

/**
 * A repository in `dir` of two commits: the first adds README.md and src/app.ts, the second changes app.ts and adds
 * a guide (the files of projectFiles).
 */
export function initRepository(dir: string): string {
  git(dir, 'init', '-q');
  write(dir, 'README.md', '# Widgets\nThey make widgets.\n');
  write(dir, 'src/app.ts', 'export const answer = 1;\n');
  commitAll(dir, 'First commit', '2024-03-01T12:00:00Z');
  projectFiles(dir);
  commitAll(dir, 'Change the answer', '2024-03-02T12:00:00Z');
  return dir;
}
