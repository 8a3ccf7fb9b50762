import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import ignore, { type Ignore } from 'ignore';

const run = promisify(execFile);

export class ProjectPathError extends Error {
  override name = 'ProjectPathError';
}

export interface ProjectContextOptions {
  /** Where git URLs are cloned (kept between runs). */
  cacheDir: string;
  /** When the server listens beyond loopback, local paths must lie under one of these. */
  allowedRoots: string[] | null;
  /** Budget for the whole context, in characters (about four per token). */
  maxChars?: number;
  cloneTimeoutMs?: number;
  maxCloneBytes?: number;
}

const MAX_DEPTH = 4;
const MAX_ENTRIES = 400;
const KEY_FILES = [
  /^readme(\.\w+)?$/i,
  /^package\.json$/,
  /^pyproject\.toml$/,
  /^cargo\.toml$/i,
  /^go\.mod$/,
  /^pom\.xml$/,
  /^build\.gradle(\.kts)?$/,
  /^(src\/)?(main|index|app|lib)\.(ts|js|py|go|rs|java)$/,
  /^src\/(main|lib)\.rs$/,
];
const ALWAYS_SKIPPED = new Set(['.git', 'node_modules', '.venv', 'target', 'dist', 'out', '__pycache__']);

/** https, ssh (`ssh://` or `git@host:path`) and file URLs are cloned; anything else is a local folder. */
export function isGitUrl(value: string): boolean {
  return /^(https?|ssh|git|file):\/\//i.test(value) || /^[\w.-]+@[\w.-]+:/.test(value);
}

async function clone(url: string, options: ProjectContextOptions): Promise<string> {
  if (url.startsWith('-')) throw new ProjectPathError(`refusing a git URL that starts with "-": ${url}`);
  const target = path.join(options.cacheDir, createHash('sha256').update(url).digest('hex').slice(0, 16));
  try {
    await fs.access(path.join(target, '.git'));
    return target;
  } catch {
    // not cloned yet
  }
  await fs.mkdir(options.cacheDir, { recursive: true, mode: 0o700 });
  const staging = `${target}.tmp-${process.pid}-${Date.now()}`;
  try {
    // execFile with an argument array: the URL never passes through a shell. `--` ends the options.
    await run('git', ['clone', '--depth', '1', '--single-branch', '--no-tags', '--', url, staging], {
      timeout: options.cloneTimeoutMs ?? 60_000,
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'echo' },
      maxBuffer: 1024 * 1024,
    });
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    const detail = (error as { stderr?: string }).stderr?.trim().split('\n').at(-1) ?? (error as Error).message;
    throw new ProjectPathError(`could not clone ${url}: ${detail}`);
  }
  const size = await folderSize(staging);
  if (size > (options.maxCloneBytes ?? 200 * 1024 * 1024)) {
    await fs.rm(staging, { recursive: true, force: true });
    throw new ProjectPathError(
      `${url} is larger than the ${Math.round((options.maxCloneBytes ?? 200 * 1024 * 1024) / 1024 / 1024)} MiB limit for project context`,
    );
  }
  await fs.rename(staging, target).catch(async () => fs.rm(staging, { recursive: true, force: true }));
  return target;
}

async function folderSize(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await fs.stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

/** When the server listens beyond loopback, local paths (file:// URLs too) must lie under PROJECT_ROOTS. */
async function assertAllowed(resolved: string, options: ProjectContextOptions): Promise<void> {
  if (!options.allowedRoots) return;
  const real = await fs.realpath(resolved).catch(() => resolved);
  const inside = options.allowedRoots.some(
    (root) => real === path.resolve(root) || real.startsWith(path.resolve(root) + path.sep),
  );
  if (inside) return;
  throw new ProjectPathError(
    options.allowedRoots.length
      ? `project path ${resolved} is outside the allowed folders (PROJECT_ROOTS: ${options.allowedRoots.join(', ')})`
      : 'local project paths are disabled when the server listens beyond loopback: set PROJECT_ROOTS to allow folders',
  );
}

async function resolveFolder(projectPath: string, options: ProjectContextOptions): Promise<string> {
  const isFileUrl = projectPath.startsWith('file://');
  if (!isFileUrl && isGitUrl(projectPath)) return clone(projectPath, options);
  const resolved = path.resolve(isFileUrl ? decodeURIComponent(new URL(projectPath).pathname) : projectPath);
  await assertAllowed(resolved, options);
  const stat = await fs.stat(resolved).catch(() => undefined);
  if (!stat) throw new ProjectPathError(`project folder ${resolved} does not exist`);
  if (!stat.isDirectory()) throw new ProjectPathError(`project path ${resolved} is not a folder`);
  // A file:// URL to a bare repository has no work tree to read: clone it like any other URL.
  const bare =
    isFileUrl &&
    (await fs.access(path.join(resolved, 'HEAD')).then(
      () => true,
      () => false,
    ));
  return bare ? clone(projectPath, options) : resolved;
}

async function readIgnore(dir: string, rules: Ignore): Promise<void> {
  const text = await fs.readFile(path.join(dir, '.gitignore'), 'utf8').catch(() => '');
  if (text) rules.add(text);
}

/** The tree, depth-bounded and count-bounded, honouring the root .gitignore; plus the key files found. */
async function walk(root: string): Promise<{ tree: string[]; keyFiles: string[] }> {
  const rules = ignore();
  await readIgnore(root, rules);
  const tree: string[] = [];
  const keyFiles: string[] = [];
  const visit = async (relative: string, depth: number) => {
    const entries = (await fs.readdir(path.join(root, relative), { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    );
    for (const entry of entries) {
      if (tree.length >= MAX_ENTRIES) return;
      const rel = relative ? `${relative}/${entry.name}` : entry.name;
      if (ALWAYS_SKIPPED.has(entry.name) || rules.ignores(entry.isDirectory() ? `${rel}/` : rel)) continue;
      tree.push(`${'  '.repeat(depth)}${entry.name}${entry.isDirectory() ? '/' : ''}`);
      if (entry.isDirectory() && depth + 1 < MAX_DEPTH) await visit(rel, depth + 1);
      else if (entry.isFile() && KEY_FILES.some((re) => re.test(rel))) keyFiles.push(rel);
    }
  };
  await visit('', 0);
  if (tree.length >= MAX_ENTRIES) tree.push(`… (more than ${MAX_ENTRIES} entries)`);
  return { tree, keyFiles };
}

/**
 * The model's view of a project: its structure and its key files (README, manifests, entry points),
 * cut to the budget. `projectPath` is a local folder or a git URL (cloned shallowly into the cache).
 */
export async function buildProjectContext(projectPath: string, options: ProjectContextOptions): Promise<string> {
  const folder = await resolveFolder(projectPath, options);
  const budget = options.maxChars ?? 16_000;
  const { tree, keyFiles } = await walk(folder);
  let text = `Repository ${projectPath}\n\nStructure:\n${tree.join('\n')}\n`;
  for (const file of keyFiles) {
    if (text.length >= budget) break;
    const content = await fs.readFile(path.join(folder, file), 'utf8').catch(() => '');
    const room = budget - text.length - file.length - 20;
    if (room <= 200) break;
    text += `\n--- ${file} ---\n${content.length > room ? `${content.slice(0, room)}\n… (cut)` : content}\n`;
  }
  return text.slice(0, budget);
}
