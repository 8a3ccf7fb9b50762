import { spawn } from 'node:child_process';
import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';
import { projectGitFolder } from './git-folder';
import { ToolCallError } from './tool-result';

/**
 * git over a project whose repository nobody vouches for: a clone of any git URL, or a local folder. Its own
 * configuration, attributes and hooks must run nothing, git must read no repository but the project's own `.git`
 * folder, and a model's revision must never become an option.
 */

export interface GitContext {
  /** The project folder, symlinks resolved: git's work tree. */
  realRoot: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/** The project's repository as openRepository checked it: the only repository git is run on. */
export interface GitRepository extends GitContext {
  /** `<project>/.git`, a folder of the project itself. */
  gitDir: string;
  /** Settings for every command: SAFE_CONFIG's, and every filter driver of the repository turned off. */
  settings: readonly string[];
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
const SAFE_SETTINGS = SAFE_CONFIG.flatMap((setting) => ['-c', setting]);

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
 * system or user configuration, and the repository and its work tree named. git then looks for no repository: none
 * above or beside the project folder is read (a project that is a sub-folder of a repository would otherwise show
 * files outside it, a bare-looking project folder would be taken for a repository), and the work tree is the project
 * folder whatever `core.worktree` says.
 */
function gitEnvironment({ realRoot, gitDir }: GitRepository): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_DIR: gitDir,
    GIT_WORK_TREE: realRoot,
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
 * The project's repository, ready for git: its `.git` folder checked (projectGitFolder), and the settings every
 * command gets, filter drivers off included.
 */
export async function openRepository(context: GitContext): Promise<GitRepository> {
  const checked = { ...context, gitDir: await projectGitFolder(context.realRoot), settings: SAFE_SETTINGS };
  return { ...checked, settings: [...SAFE_SETTINGS, ...(await filterDriversOff(checked))] };
}

/**
 * Runs git on the project's repository, without a shell, in a process group of its own so that a timeout or a
 * cancel stops whatever it started. Rejects with a ToolCallError when git fails or takes too long, and with the
 * signal's reason when the call is cancelled.
 */
export function runGit(repository: GitRepository, args: readonly string[], call: GitCall = {}): Promise<GitOutput> {
  const { realRoot, timeoutMs, signal } = repository;
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...repository.settings, ...args], {
      cwd: realRoot,
      env: gitEnvironment(repository),
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
export async function resolveCommit(repository: GitRepository, revision: string): Promise<string> {
  if (!REVISION_PATTERN.test(revision) || revision.startsWith('-')) {
    throw new ToolCallError(
      `revision ${JSON.stringify(revision.slice(0, 200))} is refused: a revision is a branch, a tag or a commit ` +
        'hash, with ~ or ^ steps, of at most 200 characters among A-Z a-z 0-9 . _ / ~ ^ @ { } -, not starting with -',
    );
  }
  const { stdout } = await runGit(
    repository,
    ['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`],
    {
      silentFailure: `${revision} is not a commit of this repository`,
    },
  );
  return stdout.toString('utf8').trim();
}

/** `filter.<driver>.<key>`: a driver's name may be empty and may hold dots; a setting without a driver is none. */
const FILTER_KEY = /^filter\.(.*)\.([^.]+)$/s;
const FILTER_PROGRAMS = ['clean', 'smudge', 'process'];

const FILTER_STAYS_ON =
  "the project's git configuration declares a filter driver that cannot be turned off: git is not run on it";

/**
 * Settings that turn off every filter driver the repository's configuration declares. A driver's `clean` program
 * runs when git reads a file of the work tree (`filter=<name>` in .gitattributes picks the driver, the empty name
 * too), its `smudge` when git writes one, and no option turns filters off: each driver is emptied by name. git then
 * reads its settings back, and whatever driver still has a program leaves the repository alone (a name holding `=`
 * cannot be written on git's command line).
 */
async function filterDriversOff(repository: GitRepository): Promise<string[]> {
  const drivers = new Set<string>();
  for (const key of (await filterSettings(repository)).keys()) {
    const driver = FILTER_KEY.exec(key)?.[1];
    if (driver !== undefined) drivers.add(driver);
  }
  if (drivers.size === 0) return [];
  const off = [...drivers].flatMap((driver) => {
    if (driver.includes('=')) throw new ToolCallError(FILTER_STAYS_ON);
    const programs = FILTER_PROGRAMS.flatMap((program) => ['-c', `filter.${driver}.${program}=`]);
    return [...programs, '-c', `filter.${driver}.required=false`];
  });
  const effective = await filterSettings({ ...repository, settings: [...repository.settings, ...off] });
  for (const [key, value] of effective) {
    if (FILTER_PROGRAMS.includes(FILTER_KEY.exec(key)?.[2] ?? '') && value !== '') {
      throw new ToolCallError(FILTER_STAYS_ON);
    }
  }
  return off;
}

/** The repository's `filter.*` settings as git reads them: each key's last value wins, the command line's last. */
async function filterSettings(repository: GitRepository): Promise<Map<string, string | undefined>> {
  const output = await runGit(repository, ['config', '-z', '--get-regexp', '^filter\\.'], { acceptedCodes: [1] });
  if (output.droppedBytes > 0) throw new ToolCallError(FILTER_STAYS_ON);
  const settings = new Map<string, string | undefined>();
  // -z: `key\nvalue` per setting, or `key` alone for one without a value; a key holds no newline.
  for (const entry of output.stdout.toString('utf8').split('\0')) {
    if (entry === '') continue;
    const newline = entry.indexOf('\n');
    if (newline < 0) settings.set(entry, undefined);
    else settings.set(entry.slice(0, newline), entry.slice(newline + 1));
  }
  return settings;
}
