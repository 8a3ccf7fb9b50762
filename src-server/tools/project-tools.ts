import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../contracts/errors';
import { PROJECT_TOOLS_SERVER, type ToolAnnotations, type ToolDefinition, type ToolResult } from '../contracts/tools';
import { getLogger } from '../log';
import { readRegularFile } from '../context/regular-file';
import { projectRelative, realProjectRoot, resolveExisting, resolveForWrite } from './project-paths';
import {
  DIFF_OPTIONS,
  type GitContext,
  type GitOutput,
  type GitRepository,
  openRepository,
  resolveCommit,
  runGit,
} from './safe-git';
import { ToolCallError, capToolText } from './tool-result';

/**
 * The built-in tools over a run's project folder (server `project`): listing, reading and searching its files, git's
 * history and diffs, and writing a file. Paths stay inside the folder (project-paths.ts) and git runs nothing the
 * repository asks for (safe-git.ts).
 */

const log = getLogger('svc.tools');

export interface ProjectToolsOptions {
  /** The project folder (absolute). */
  root: string;
  /** false for a git URL's project (a clone shared through the cache): write_file is refused with a clear message. */
  writable: boolean;
  /** Per-call time limit (ms) for git. */
  timeoutMs: number;
}

const MAX_LIST_ENTRIES = 1000;
const READ_BYTES = 256 * 1024;
const DEFAULT_READ_LINES = 400;
const SEARCHED_FILE_BYTES = 1024 * 1024;
/** A search stops after this many files, so that one call over a huge tree stays short. */
const MAX_SEARCHED_FILES = 20_000;
const MAX_MATCH_LINE_CHARS = 300;
const MAX_WRITE_BYTES = 1024 * 1024;
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOFOLLOW;
const NOT_WRITABLE = 'the project is a clone of a git URL shared by other runs: nothing is written there';

const ProjectPath = z.string().max(4096);
const Revision = z.string().max(200);

const inputs = {
  list_files: z.strictObject({
    path: ProjectPath.default('.').describe('A folder, relative to the project folder.'),
    depth: z.number().int().min(1).max(5).default(2).describe('How many levels below the folder are listed.'),
  }),
  read_file: z.strictObject({
    path: ProjectPath.describe('A file, relative to the project folder.'),
    offset: z.number().int().min(1).optional().describe('The first line to read (1-based).'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(2000)
      .default(DEFAULT_READ_LINES)
      .describe('How many lines to read from offset.'),
  }),
  search_files: z.strictObject({
    pattern: z.string().min(1).max(1000).describe('Literal text to find, case-insensitive (not a regular expression).'),
    path: ProjectPath.default('.').describe('A folder or file to search, relative to the project folder.'),
    max_results: z.number().int().min(1).max(200).default(50).describe('The most matching lines returned.'),
  }),
  git_diff: z.strictObject({
    revision: Revision.optional().describe(
      'A commit: its changes against its parent. Without it, the working tree against `against` (default HEAD).',
    ),
    against: Revision.optional().describe('The revision compared with: with `revision`, `git diff against revision`.'),
    paths: z.array(ProjectPath).max(100).optional().describe('Only these files or folders.'),
  }),
  git_log: z.strictObject({
    revision: Revision.default('HEAD').describe('Where the history starts.'),
    max_count: z.number().int().min(1).max(100).default(20).describe('How many commits.'),
    path: ProjectPath.optional().describe('Only commits that touch this file or folder.'),
  }),
  git_show: z.strictObject({
    revision: Revision.describe('A commit.'),
    path: ProjectPath.optional().describe(
      'A file (or folder) to show as it is at the revision, instead of the commit.',
    ),
  }),
  write_file: z.strictObject({
    path: ProjectPath.describe('The file, relative to the project folder; missing folders are created.'),
    content: z.string().describe('The whole new content of the file.'),
    if_exists: z
      .enum(['replace', 'refuse'])
      .default('replace')
      .describe('What to do when the file exists: replace it, or refuse and keep it.'),
  }),
};
type ToolName = keyof typeof inputs;
type Input<T extends ToolName> = z.output<(typeof inputs)[T]>;

interface CallContext extends GitContext {
  options: ProjectToolsOptions;
}

const READ_ONLY: ToolAnnotations = { read_only: true, idempotent: true, destructive: false };

const tools: { [T in ToolName]: { description: string; annotations: ToolAnnotations; run: Runner<T> } } = {
  list_files: {
    description:
      'Lists the files and folders under a folder of the project, folders ending with "/", sorted, .git left out.',
    annotations: READ_ONLY,
    run: listFiles,
  },
  read_file: {
    description:
      'Reads a text file of the project, with line numbers: `limit` lines from line `offset`. Only the first 256 KiB ' +
      'of a file are read; binary files are refused.',
    annotations: READ_ONLY,
    run: readFile,
  },
  search_files: {
    description:
      'Finds lines containing a literal text (case-insensitive) in the files under a folder of the project, as ' +
      '`file:line: text`. Binary files, files over 1 MiB and .git are skipped.',
    annotations: READ_ONLY,
    run: searchFiles,
  },
  git_diff: {
    description:
      "The project's changes as a patch: without arguments, the working tree against HEAD; with `revision`, what " +
      'that commit changed; with `revision` and `against`, `git diff against revision`.',
    annotations: READ_ONLY,
    run: gitDiff,
  },
  git_log: {
    description: 'The history from a revision, one commit a line: short hash, date, author, subject.',
    annotations: READ_ONLY,
    run: gitLog,
  },
  git_show: {
    description: "A commit's message and patch, or with `path` that file's content at the commit.",
    annotations: READ_ONLY,
    run: gitShow,
  },
  write_file: {
    description:
      'Writes a text file of the project (created or replaced whole), creating its folders. Refused when the ' +
      'project is a shared clone of a git URL, and inside .git; with if_exists "refuse", an existing file is kept.',
    // Writing the same content twice leaves the same file; replacing a file loses what it held.
    annotations: { read_only: false, idempotent: true, destructive: true },
    run: writeFile,
  },
};
type Runner<T extends ToolName> = (context: CallContext, input: Input<T>) => Promise<string>;

/**
 * The tools' definitions as the model sees them (name `project.<tool>`, server 'project', tool '<tool>', JSON Schema
 * input, annotations).
 */
export const PROJECT_TOOLS: readonly ToolDefinition[] = (Object.keys(tools) as ToolName[]).map((tool) => {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(inputs[tool], { io: 'input' });
  return {
    name: `${PROJECT_TOOLS_SERVER}.${tool}`,
    server: PROJECT_TOOLS_SERVER,
    tool,
    description: tools[tool].description,
    inputSchema,
    annotations: tools[tool].annotations,
  };
});

/**
 * Runs one tool. Bad input, a refused path or a failing git gives `is_error: true` with a clear message (it goes back
 * to the model); it throws only when `signal` aborts.
 */
export async function callProjectTool(
  options: ProjectToolsOptions,
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ToolResult> {
  signal.throwIfAborted();
  if (!Object.hasOwn(tools, tool)) {
    return failed(
      `no tool named ${PROJECT_TOOLS_SERVER}.${tool}: the project tools are ${Object.keys(tools).join(', ')}`,
    );
  }
  const name = tool as ToolName;
  const parsed = inputs[name].safeParse(args);
  if (!parsed.success)
    return failed(`invalid input for ${PROJECT_TOOLS_SERVER}.${name}:\n${z.prettifyError(parsed.error)}`);
  try {
    const realRoot = await realProjectRoot(options.root);
    const context: CallContext = { options, realRoot, timeoutMs: options.timeoutMs, signal };
    const run = tools[name].run as Runner<ToolName>;
    const text = await run(context, parsed.data);
    signal.throwIfAborted();
    return { text: capToolText(text), is_error: false };
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof ToolCallError) return failed(error.message);
    const known = fileFailure(error);
    if (known) return failed(known);
    log.warn(`${PROJECT_TOOLS_SERVER}.${name} failed: ${errorMessage(error)}`);
    return failed(`${PROJECT_TOOLS_SERVER}.${name} failed unexpectedly`);
  }
}

const failed = (text: string): ToolResult => ({ text: capToolText(text), is_error: true });
const notRegular = (shown: string) => `${shown} is not a regular file`;

/** A file system error in words, without the server's path (the model knows which path it named). */
function fileFailure(error: unknown): string | undefined {
  switch ((error as NodeJS.ErrnoException | undefined)?.code) {
    case 'ENOENT':
      return 'the path does not exist in the project';
    case 'EACCES':
    case 'EPERM':
      return 'the server may not access that path (permission denied)';
    case 'EISDIR':
      return 'the path is a folder';
    case 'ENOTDIR':
      return 'a part of the path is a file, not a folder';
    case 'ELOOP':
      return 'the path is a symlink (or goes through too many of them)';
    case 'ENXIO':
      // A FIFO that nobody reads, opened for writing without waiting.
      return 'the path is not a regular file';
    case 'ENOSPC':
    case 'EDQUOT':
      return 'the disk is full';
    case 'EROFS':
      return 'the project folder is read-only';
    default:
      return undefined;
  }
}

async function listFiles(context: CallContext, input: Input<'list_files'>): Promise<string> {
  const { real, shown } = await resolveExisting(context.realRoot, input.path);
  if (!(await fs.stat(real)).isDirectory()) throw new ToolCallError(`${shown} is a file: read it with read_file`);
  const entries: string[] = [];
  let cut = false;
  // Symlinks are listed, never followed: a symlinked folder shows without its trailing "/".
  const visit = async (folder: string, shownFolder: string, level: number) => {
    context.signal.throwIfAborted();
    const children = (await fs.readdir(folder, { withFileTypes: true }).catch(() => [])).sort(byName);
    for (const child of children) {
      if (child.name === '.git') continue;
      if (entries.length >= MAX_LIST_ENTRIES) {
        cut = true;
        return;
      }
      const entry = shownFolder === '.' ? child.name : `${shownFolder}/${child.name}`;
      entries.push(child.isDirectory() ? `${entry}/` : entry);
      if (child.isDirectory() && level < input.depth) await visit(path.join(folder, child.name), entry, level + 1);
    }
  };
  await visit(real, shown, 1);
  if (entries.length === 0) return `${shown} is an empty folder`;
  if (cut) entries.push(`… cut at ${MAX_LIST_ENTRIES} entries: list a sub-folder, or with a smaller depth`);
  return entries.join('\n');
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

async function readFile(context: CallContext, input: Input<'read_file'>): Promise<string> {
  const { real, shown } = await resolveExisting(context.realRoot, input.path);
  if ((await fs.stat(real)).isDirectory()) throw new ToolCallError(`${shown} is a folder: list it with list_files`);
  const file = await readRegularFile(real, READ_BYTES);
  if (!file) throw new ToolCallError(notRegular(shown));
  const { bytes, size } = file;
  if (bytes.includes(0)) throw new ToolCallError(`${shown} is a binary file (${size} bytes): only text files are read`);
  if (bytes.length === 0) return `${shown} is empty`;
  const partial = size > bytes.length;
  const lines = splitLines(bytes.toString('utf8'));
  // A partly read file may end in the middle of a line: that line is not shown.
  if (partial && lines.length > 1) lines.pop();
  const total = lines.length;
  const from = input.offset ?? 1;
  if (from > total) {
    throw new ToolCallError(
      `offset ${from} is past the end: ${shown} has ${total} lines${partial ? ' that are read' : ''}`,
    );
  }
  const to = Math.min(total, from + input.limit - 1);
  const width = String(to).length;
  const numbered = lines.slice(from - 1, to).map((line, i) => `${String(from + i).padStart(width)}\t${line}`);
  const header = partial
    ? `${shown}: lines ${from}-${to} of the first ${total} (the file has ${size} bytes; only its first 256 KiB are read)`
    : `${shown}: lines ${from}-${to} of ${total}`;
  const footer = to < total ? [`… ${total - to} more lines: read on with offset ${to + 1}`] : [];
  return [header, ...numbered, ...footer].join('\n');
}

function splitLines(text: string): string[] {
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

async function searchFiles(context: CallContext, input: Input<'search_files'>): Promise<string> {
  const { real, shown } = await resolveExisting(context.realRoot, input.path);
  const needle = input.pattern.toLowerCase();
  const matches: string[] = [];
  let more = false;
  let searched = 0;
  let skipped = 0;
  const searchFile = async (file: string, shownFile: string) => {
    if (searched >= MAX_SEARCHED_FILES) return;
    const stat = await fs.lstat(file).catch(() => undefined);
    if (!stat?.isFile() || stat.size > SEARCHED_FILE_BYTES) {
      skipped += 1;
      return;
    }
    const read = await readRegularFile(file, SEARCHED_FILE_BYTES).catch(() => undefined);
    searched += 1;
    if (!read || read.bytes.includes(0)) {
      skipped += 1;
      return;
    }
    const lines = splitLines(read.bytes.toString('utf8'));
    for (let i = 0; i < lines.length; i += 1) {
      if (!lines[i]!.toLowerCase().includes(needle)) continue;
      if (matches.length >= input.max_results) {
        more = true;
        return;
      }
      const line = lines[i]!.trim();
      const text = line.length > MAX_MATCH_LINE_CHARS ? `${line.slice(0, MAX_MATCH_LINE_CHARS)}…` : line;
      matches.push(`${shownFile}:${i + 1}: ${text}`);
    }
  };
  // Symlinks are never followed: what one inside points at is searched where it really is.
  const visit = async (folder: string, shownFolder: string) => {
    const children = (await fs.readdir(folder, { withFileTypes: true }).catch(() => [])).sort(byName);
    for (const child of children) {
      context.signal.throwIfAborted();
      if (more || searched >= MAX_SEARCHED_FILES) return;
      if (child.name === '.git') continue;
      const childShown = shownFolder === '.' ? child.name : `${shownFolder}/${child.name}`;
      if (child.isDirectory()) await visit(path.join(folder, child.name), childShown);
      else if (child.isFile()) await searchFile(path.join(folder, child.name), childShown);
    }
  };
  const stat = await fs.stat(real);
  if (stat.isDirectory()) await visit(real, shown);
  else if (stat.isFile()) await searchFile(real, shown);
  else throw new ToolCallError(notRegular(shown));
  const notes: string[] = [];
  if (more) notes.push(`… more matches past ${input.max_results}: narrow the path or the pattern`);
  if (searched >= MAX_SEARCHED_FILES) notes.push(`… stopped after ${MAX_SEARCHED_FILES} files: search a sub-folder`);
  if (skipped > 0) notes.push(`(${skipped} binary or larger than 1 MiB files were skipped)`);
  if (matches.length === 0) notes.unshift(`no line contains ${JSON.stringify(input.pattern)} under ${shown}`);
  return [...matches, ...notes].join('\n');
}

/** git's output as text, with the note of what was cut when git printed more than is kept. */
function gitText(output: GitOutput): string {
  const text = output.stdout.toString('utf8');
  if (output.droppedBytes === 0) return text;
  return capToolText(text, {
    unread: output.stopped
      ? `more than ${output.droppedBytes} bytes git printed after (it was stopped)`
      : `${output.droppedBytes} bytes git printed after`,
  });
}

const pathspec = (paths: readonly string[]) => ['--', ...paths.map(projectRelative)];

async function gitDiff(context: CallContext, input: Input<'git_diff'>): Promise<string> {
  const paths = pathspec(input.paths ?? []);
  const repository = await openRepository(context);
  let output: GitOutput;
  if (input.revision === undefined) {
    const base = await resolveCommit(repository, input.against ?? 'HEAD');
    // Submodules in the work tree stay unread: their `.git` may name any repository, and git would run `status` in
    // them under their own configuration.
    output = await runGit(repository, ['diff', ...DIFF_OPTIONS, '--ignore-submodules=all', base, ...paths]);
  } else {
    const commit = await resolveCommit(repository, input.revision);
    const base =
      input.against !== undefined ? await resolveCommit(repository, input.against) : await parentOf(repository, commit);
    output = await runGit(repository, ['diff', ...DIFF_OPTIONS, base, commit, ...paths]);
  }
  return gitText(output) || 'no differences';
}

/** A commit's first parent, or the empty tree for a root commit (its diff then adds every file). */
async function parentOf(repository: GitRepository, commit: string): Promise<string> {
  const parent = await runGit(repository, ['rev-parse', '--verify', '--quiet', `${commit}^1^{commit}`], {
    acceptedCodes: [1],
  });
  if (parent.exitCode === 0) return parent.stdout.toString('utf8').trim();
  const emptyTree = await runGit(repository, ['hash-object', '-t', 'tree', '--no-filters', '--stdin']);
  return emptyTree.stdout.toString('utf8').trim();
}

async function gitLog(context: CallContext, input: Input<'git_log'>): Promise<string> {
  const repository = await openRepository(context);
  const commit = await resolveCommit(repository, input.revision);
  const output = await runGit(repository, [
    'log',
    '--no-color',
    `--max-count=${input.max_count}`,
    '--date=short',
    '--format=%h %ad %an: %s',
    commit,
    ...pathspec(input.path === undefined ? [] : [input.path]),
  ]);
  return gitText(output) || 'no commits';
}

async function gitShow(context: CallContext, input: Input<'git_show'>): Promise<string> {
  const repository = await openRepository(context);
  const commit = await resolveCommit(repository, input.revision);
  if (input.path === undefined) {
    return gitText(await runGit(repository, ['show', ...DIFF_OPTIONS, '--format=medium', commit]));
  }
  const file = projectRelative(input.path);
  const output = await runGit(repository, ['show', ...DIFF_OPTIONS, `${commit}:${file === '.' ? '' : file}`]);
  if (output.stdout.includes(0)) throw new ToolCallError(`${file} is a binary file at ${input.revision}`);
  return gitText(output);
}

async function writeFile(context: CallContext, input: Input<'write_file'>): Promise<string> {
  if (!context.options.writable) throw new ToolCallError(NOT_WRITABLE);
  const bytes = Buffer.byteLength(input.content);
  if (bytes > MAX_WRITE_BYTES) throw new ToolCallError(`the content is ${bytes} bytes: at most 1 MiB is written`);
  const { real, shown } = await resolveForWrite(context.realRoot, input.path);
  const special = () => new ToolCallError(`${notRegular(shown)}: write_file writes regular files only`);
  const existing = await fs.lstat(real).catch(() => undefined);
  if (existing?.isDirectory()) throw new ToolCallError(`${shown} is a folder: write_file writes a file`);
  if (existing && !existing.isFile()) throw special();
  const kept = () => new ToolCallError(`${shown} exists and is kept: if_exists "refuse" writes a new file only`);
  if (existing && input.if_exists === 'refuse') {
    // The same content already there is this call done before (a retry after a crash): the write stays idempotent.
    const held = existing.size === bytes ? await readRegularFile(real, MAX_WRITE_BYTES) : undefined;
    if (held?.bytes.equals(Buffer.from(input.content))) {
      return `${shown} already holds this content (${bytes} bytes)`;
    }
    throw kept();
  }
  // Never waiting (a FIFO put in place since would hold the call and a thread of libuv's pool until it is read), and
  // never following a symlink put in place since the path was checked; emptied only once it is known to be a file.
  const file = await fs
    .open(real, input.if_exists === 'refuse' ? WRITE_FLAGS | constants.O_EXCL : WRITE_FLAGS)
    .catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'EEXIST' ? kept() : error;
    });
  try {
    if (!(await file.stat()).isFile()) throw special();
    await file.truncate(0);
    await file.writeFile(input.content);
  } finally {
    await file.close();
  }
  return `${existing ? 'replaced' : 'created'} ${shown} (${bytes} bytes)`;
}
