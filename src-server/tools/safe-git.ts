import { spawn } from 'node:child_process';
import path from 'node:path';
import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';
import { ToolCallError } from './tool-result';

/**
 * git over a project whose repository nobody vouches for: a clone of any git URL, or a local folder. Its own
 * configuration, attributes and hooks must run nothing, and a model's revision must never become an option.
 */

export interface GitContext {
  /** The project folder, symlinks resolved: git's work tree, and the only place it looks for a repository. */
  realRoot: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/**
 * Command-line configuration, which wins over the repository's. Each turns off a way the repository's
 * configuration would make git run a program of its choice (or reach the network) while reading.
 */
const SAFE_CONFIG = [
  // A hook program that reports changed files, run when the index is refreshed.
  'core.fsmonitor=false',
  // Hooks (post-index-change runs when git writes the index).
  'core.hooksPath=/dev/null',
  // log.showSignature makes log and show run gpg.program on every signed commit.
  'log.showSignature=false',
  // A partial clone fetches missing objects on demand: through any transport (ext:: runs a command) or ssh.
  'protocol.allow=never',
  'core.pager=cat',
  'color.ui=never',
];

/**
 * Options for every command that prints a diff: no external diff program (diff.external, a diff driver's
 * `command`), no textconv filter, and no look into a submodule's work tree (git would run `status` there, under
 * that submodule's own configuration).
 */
export const DIFF_OPTIONS = ['--no-ext-diff', '--no-textconv', '--no-color', '--submodule=short'];

/** What git prints that is kept: enough for MAX_TOOL_RESULT_CHARS characters, whatever their UTF-8 width. */
const KEEP_BYTES = MAX_TOOL_RESULT_CHARS * 4;
/** Past this much output git is stopped: the rest is only counted, and counting forever is no use either. */
const STOP_BYTES = 64 * 1024 * 1024;
const STDERR_BYTES = 8192;

export interface GitOutput {
  /** stdout, at most KEEP_BYTES of it. */
  stdout: Buffer;
  /** Bytes of stdout past KEEP_BYTES (counted, not kept). */
  droppedBytes: number;
  /** git printed more than STOP_BYTES and was stopped: droppedBytes is a lower bound. */
  stopped: boolean;
  exitCode: number;
}

export interface GitCall {
  /** Exit codes that are answers, not failures (`git config --get-regexp` exits 1 when nothing matches). */
  acceptedCodes?: readonly number[];
  /** The message when git fails without a word on stderr (`rev-parse --quiet`). */
  silentFailure?: string;
}

/**
 * The environment git gets: nothing of the server's own (tokens, GIT_DIR, GIT_EXTERNAL_DIFF, GIT_CONFIG_*), no
 * system or user configuration, and no repository above the project folder (a project that is a sub-folder of a
 * repository would otherwise show files outside it).
 */
function gitEnvironment(realRoot: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CEILING_DIRECTORIES: path.dirname(realRoot),
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    // Reading never takes index.lock: runs sharing a cached clone do not trip over each other.
    GIT_OPTIONAL_LOCKS: '0',
    // A path is a path: no `:(glob)` or `:/` magic in what the model names.
    GIT_LITERAL_PATHSPECS: '1',
    GIT_NO_LAZY_FETCH: '1',
  };
}

/**
 * Runs git in the project folder, without a shell, in a process group of its own so that a timeout or a cancel
 * stops whatever it started. The work tree is the project folder whatever `core.worktree` says. Rejects with a
 * ToolCallError when git fails or takes too long, and with the signal's reason when the call is cancelled.
 */
export function runGit(context: GitContext, args: readonly string[], call: GitCall = {}): Promise<GitOutput> {
  const { realRoot, timeoutMs, signal } = context;
  signal.throwIfAborted();
  const options = SAFE_CONFIG.flatMap((setting) => ['-c', setting]);
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...options, `--work-tree=${realRoot}`, ...args], {
      cwd: realRoot,
      env: gitEnvironment(realRoot),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let droppedBytes = 0;
    let stderr = '';
    let stopReason: 'timeout' | 'abort' | 'too much output' | undefined;
    let settled = false;
    const stop = (reason: NonNullable<typeof stopReason>) => {
      if (stopReason) return;
      stopReason = reason;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const onAbort = () => stop('abort');
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      settle();
    };
    child.stdout!.on('data', (chunk: Buffer) => {
      const room = KEEP_BYTES - keptBytes;
      if (room > 0) {
        kept.push(chunk.subarray(0, room));
        keptBytes += Math.min(room, chunk.length);
      }
      droppedBytes += Math.max(0, chunk.length - Math.max(room, 0));
      if (keptBytes + droppedBytes > STOP_BYTES) stop('too much output');
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < STDERR_BYTES) stderr += chunk;
    });
    child.on('error', (error) =>
      finish(() => reject(new ToolCallError(`git could not be run on this server: ${error.message}`))),
    );
    child.on('close', (code) =>
      finish(() => {
        if (stopReason === 'abort') return reject(signal.reason);
        if (stopReason === 'timeout') {
          return reject(new ToolCallError(`git took longer than ${timeoutMs / 1000} s and was stopped`));
        }
        const output = { stdout: Buffer.concat(kept), droppedBytes, stopped: stopReason !== undefined };
        if (stopReason || code === 0 || call.acceptedCodes?.includes(code ?? -1)) {
          return resolve({ ...output, exitCode: code ?? -1 });
        }
        reject(new ToolCallError(gitFailure(stderr, realRoot) || call.silentFailure || `git failed (exit ${code})`));
      }),
    );
  });
}

/** git's own words for a failure, shortened, and without the server's path to the project. */
function gitFailure(stderr: string, realRoot: string): string {
  if (/not a git repository/i.test(stderr)) return 'the project folder is not a git repository';
  return stderr
    .split('\n')
    .map((line) => line.replace(/^(fatal|error): /, '').trim())
    .filter(Boolean)
    .slice(0, 3)
    .join('\n')
    .replaceAll(realRoot, '.');
}

/** What a revision may look like: names, hashes, `~`/`^` steps, reflog `@{…}`; nothing that git reads as an option. */
const REVISION_PATTERN = /^[A-Za-z0-9._/~^@{}-]{1,200}$/;

/**
 * The full hash of the commit a model's revision names. A revision is checked before git sees it, and only the
 * hash is ever passed on: whatever it said, it reaches no other command.
 */
export async function resolveCommit(context: GitContext, revision: string): Promise<string> {
  if (!REVISION_PATTERN.test(revision) || revision.startsWith('-')) {
    throw new ToolCallError(
      `revision ${JSON.stringify(revision.slice(0, 200))} is refused: a revision is a branch, a tag or a commit ` +
        'hash, with ~ or ^ steps, of at most 200 characters among A-Z a-z 0-9 . _ / ~ ^ @ { } -, not starting with -',
    );
  }
  const { stdout } = await runGit(
    context,
    ['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`],
    {
      silentFailure: `${revision} is not a commit of this repository`,
    },
  );
  return stdout.toString('utf8').trim();
}

/**
 * Command-line settings that turn off every filter driver the repository's configuration declares. Comparing the
 * work tree runs a file through its `clean` filter (from .gitattributes), and no command-line option turns filters
 * off: each driver is emptied by name. A driver whose name holds `=` cannot be named on git's command line, so the
 * work tree is not compared at all.
 */
export async function filterDriversOff(context: GitContext): Promise<string[]> {
  const { stdout } = await runGit(context, ['config', '--name-only', '-z', '--get-regexp', '^filter\\.'], {
    acceptedCodes: [1],
  });
  const drivers = new Set<string>();
  for (const key of stdout.toString('utf8').split('\0')) {
    const driver = /^filter\.(.+)\.[^.]+$/s.exec(key)?.[1];
    if (driver !== undefined) drivers.add(driver);
  }
  const settings: string[] = [];
  for (const driver of drivers) {
    if (driver.includes('=')) {
      throw new ToolCallError(
        "the project's git configuration declares a filter driver that cannot be turned off, so the work tree is " +
          'not compared: ask for a diff between two revisions instead',
      );
    }
    for (const key of ['clean', 'smudge', 'process']) settings.push('-c', `filter.${driver}.${key}=`);
    settings.push('-c', `filter.${driver}.required=false`);
  }
  return settings;
}
