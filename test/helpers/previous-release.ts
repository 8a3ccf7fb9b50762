import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Launch } from './process';

/**
 * The release before this version, built from git as a user would have installed it: the tree of its commit, its own
 * locked dependencies (`npm ci`) and its own build (`node build/build.mjs`: the assets, the studio and the server
 * bundled into out/server/cli.js). An upgrade test runs it on a database and then this version on the same one.
 *
 * The built folder is kept under the system's temporary folder, named by the commit, and reused by the next run when
 * it is complete (its marker file is written last, and the folder moved into place whole), so that only the first run
 * on a machine pays for npm ci and the build. It needs the commit in the clone (CI clones are full) and the npm
 * registry, nothing else of the network.
 */
export const PREVIOUS_RELEASE = '4405bc1';

const root = path.resolve(import.meta.dirname, '..', '..');
const MARKER = '.previous-release-complete';
/** Lines of a failing command's output shown in the error. */
const TAIL_LINES = 60;

export interface PreviousRelease {
  /** The full sha of the commit it was built from. */
  sha: string;
  /** Its folder: the commit's tree, node_modules and the build's outputs. */
  dir: string;
  /** How spawnServer starts it: its compiled server, as `npm start` runs it. */
  launch: Launch;
  /** Whether this call built it (false: the folder of an earlier run was reused). */
  built: boolean;
  /** How long this call took, in milliseconds. */
  ms: number;
}

/** Runs a command to its end (with `stdin` piped in, when given); fails with its exit and the tail of what it wrote. */
function run(
  command: string,
  args: string[],
  { cwd, env = process.env, stdin }: { cwd: string; env?: NodeJS.ProcessEnv; stdin?: NodeJS.ReadableStream },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    if (stdin) stdin.pipe(child.stdin!);
    child.on('error', (error) => reject(new Error(`${command} could not start: ${error.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) return resolve(output);
      const tail = output.trimEnd().split('\n').slice(-TAIL_LINES).join('\n');
      reject(
        new Error(
          `\`${command} ${args.join(' ')}\` in ${cwd} exited with ${signal ?? code}; the last lines it wrote:\n${tail}`,
        ),
      );
    });
  });
}

/** The commit's full sha, or an error that says how to get it (a shallow clone lacks it). */
async function resolveSha(commit: string): Promise<string> {
  try {
    return (await run('git', ['rev-parse', '--verify', '--quiet', `${commit}^{commit}`], { cwd: root })).trim();
  } catch {
    throw new Error(
      `commit ${commit} (the previous release) is not in the clone at ${root}: the upgrade tests need the full history ` +
        '(git fetch --unshallow)',
    );
  }
}

/** The commit's tree, extracted into `dir`: git archive | tar -x. */
async function extract(sha: string, dir: string): Promise<void> {
  const archive = spawn('git', ['archive', '--format=tar', sha], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let archiveErrors = '';
  archive.stderr.on('data', (chunk: Buffer) => (archiveErrors += chunk.toString()));
  const archived = new Promise<void>((resolve, reject) =>
    archive.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`git archive ${sha} exited with ${code}: ${archiveErrors}`)),
    ),
  );
  await Promise.all([run('tar', ['-x', '-C', dir], { cwd: dir, stdin: archive.stdout }), archived]);
}

/**
 * The previous release, built (or found built) under os.tmpdir(). Takes one to a few minutes the first time on a
 * machine (npm ci, then the studio's and the server's builds), a few milliseconds after.
 */
export async function previousRelease(commit = PREVIOUS_RELEASE): Promise<PreviousRelease> {
  const started = Date.now();
  const sha = await resolveSha(commit);
  const dir = path.join(os.tmpdir(), `svc-previous-release-${sha}`);
  const launch: Launch = { cwd: dir, args: ['--enable-source-maps', 'out/server/cli.js'] };
  const done = (built: boolean): PreviousRelease => ({ sha, dir, launch, built, ms: Date.now() - started });
  if (existsSync(path.join(dir, MARKER))) return done(false);

  // Built in a folder of its own, then moved into place whole: a build cut off leaves no folder that looks complete.
  await fs.rm(dir, { recursive: true, force: true });
  const staging = await fs.mkdtemp(`${dir}.building-`);
  try {
    await extract(sha, staging);
    // Its dependencies from the registry (npm's cache helps), with no install scripts: the server needs none.
    await run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: staging,
      env: { ...process.env, npm_config_loglevel: 'warn', npm_config_update_notifier: 'false' },
    });
    await run(process.execPath, ['build/build.mjs'], { cwd: staging });
    if (!existsSync(path.join(staging, 'out', 'server', 'cli.js'))) {
      throw new Error(`build/build.mjs left no out/server/cli.js in ${staging}`);
    }
    await fs.writeFile(path.join(staging, MARKER), `${sha}\n${new Date().toISOString()}\n`);
    await fs.rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another run finished the same build first: use its folder.
      if (!existsSync(path.join(dir, MARKER))) throw error;
      await fs.rm(staging, { recursive: true, force: true });
    });
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    throw new Error(`the previous release (${commit}, ${sha}) could not be built: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return done(true);
}
