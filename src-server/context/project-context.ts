import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ignore, { type Ignore } from 'ignore';
import { badRequest, conflict } from '../contracts/errors';
import { cloneIntoCache, holding } from './clone-cache';
import { ProjectPathError } from './errors';
import { readRegularFile } from './regular-file';
import { isGitUrl, parseGitUrl, resolvePublicHost } from './git-url';

export { ProjectPathError } from './errors';
export { isGitUrl } from './git-url';

export interface ProjectContextOptions {
  /** Where git URLs are cloned (kept between runs): DATA_DIR/repositories. Never read as a project. */
  cacheDir: string;
  /** PROJECT_ROOTS. When set, every local path (file:// URLs too) must lie under one of these, whoever asks. */
  allowedRoots: readonly string[];
  /** GIT_ALLOWED_HOSTS: git hosts that may resolve to loopback, link-local or private addresses. */
  allowedGitHosts?: readonly string[];
  /** Budget for the whole context, in characters (about four per token). */
  maxChars?: number;
  cloneTimeoutMs?: number;
  maxCloneBytes?: number;
  /** The whole clone cache; the least recently used clones are evicted beyond it. */
  maxCacheBytes?: number;
  /** A cached clone fetched longer ago than this is fetched again (GIT_REFRESH_S); unset: kept until evicted. */
  refreshMs?: number;
  /** The run's signal: cancelling the run stops its clone. */
  signal?: AbortSignal;
}

/**
 * Where under PROJECT_ROOTS the runs of one organisation may work (docs/security.md#project-paths): its registered
 * folders, or anywhere under the roots for the default organisation; never in, or around, another organisation's.
 */
export interface TenantFolders {
  /** The organisation's registered folders; `any` for the default organisation. */
  own: readonly string[] | 'any';
  /** The folders registered to every other organisation. */
  others: readonly string[];
}

/** Who asks for a project path, as far as the path rules care. */
export interface PathCaller {
  /** The API token (or per-launch token) caller, or the anonymous user when authentication is off. */
  instanceAdmin: boolean;
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
const MAX_IGNORE_BYTES = 1024 * 1024;
const ALWAYS_SKIPPED = new Set(['.git', 'node_modules', '.venv', 'target', 'dist', 'out', '__pycache__']);

/** Whether `child` is `root` or lies under it (both absolute, resolved). */
function inside(child: string, root: string): boolean {
  const relative = path.relative(root, child);
  return relative === '' || (relative.split(path.sep)[0] !== '..' && !path.isAbsolute(relative));
}

/** Where a path really leads, symlinks resolved; a part that does not exist yet is taken as written. */
async function realLocation(target: string): Promise<string> {
  try {
    return await fs.realpath(target);
  } catch {
    const parent = path.dirname(target);
    return parent === target ? target : path.join(await realLocation(parent), path.basename(target));
  }
}

/** The local folder a project path names: a path, or a file:// URL. */
function localFolder(projectPath: string): string {
  if (!projectPath.startsWith('file://')) return path.resolve(projectPath);
  try {
    return path.resolve(fileURLToPath(projectPath));
  } catch {
    throw new ProjectPathError(`project path ${projectPath} is not a file URL of this machine`);
  }
}

/** Why `real` may not be used beside the folders of other organisations; undefined when it may. */
async function clashWithOthers(real: string, folder: string, others: readonly string[]): Promise<string | undefined> {
  for (const other of await Promise.all(others.map((dir) => realLocation(dir)))) {
    if (inside(real, other)) return `project path ${folder} is in a folder of another organisation`;
    if (inside(other, real)) return `project path ${folder} holds a folder of another organisation`;
  }
  return undefined;
}

/**
 * The rules of local paths, on the path's real location (symlinks, `..` and /proc/self/cwd resolved): never the
 * clone cache, whoever asks; under PROJECT_ROOTS when it is set, whoever asks, and there within the folders of the
 * run's organisation (`folders`, when tenancy applies); when it is not set, only for the instance administrator.
 * `caller` undefined (when a run executes) checks what does not depend on the caller: the caller was checked when
 * the run started.
 */
async function assertLocalAllowed(
  folder: string,
  options: ProjectContextOptions,
  caller?: PathCaller,
  folders?: TenantFolders,
) {
  const real = await realLocation(folder);
  if (inside(real, await realLocation(path.resolve(options.cacheDir)))) {
    throw new ProjectPathError(`project path ${folder} is inside the server's clone cache, which is never read`);
  }
  if (options.allowedRoots.length > 0) {
    const roots = await Promise.all(options.allowedRoots.map((root) => realLocation(path.resolve(root))));
    if (!roots.some((root) => inside(real, root))) {
      throw new ProjectPathError(
        `project path ${folder} is outside the allowed folders (PROJECT_ROOTS: ${options.allowedRoots.join(', ')})`,
      );
    }
    if (!folders) return;
    const clash = await clashWithOthers(real, folder, folders.others);
    if (clash) throw new ProjectPathError(clash);
    if (folders.own === 'any') return;
    const own = await Promise.all(folders.own.map((dir) => realLocation(dir)));
    if (own.some((dir) => inside(real, dir))) return;
    throw new ProjectPathError(
      own.length
        ? `project path ${folder} is outside the folders of this project's organisation (${folders.own.join(', ')})`
        : `project path ${folder} is outside the folders of this project's organisation: it has none yet ` +
            '(an administrator of the organisation registers them under PROJECT_ROOTS)',
    );
  }
  if (caller && !caller.instanceAdmin) {
    throw new ProjectPathError(
      'local project paths are disabled: set PROJECT_ROOTS to the folders runs may read ' +
        '(without it, only the instance administrator may name a local folder)',
    );
  }
}

/**
 * Whether `caller` may give this project path to a run or a thread, checked before anything is stored: a local
 * path by the rules above, a git URL without credentials. A refusal is a 400 with the reason. Whether a git host
 * may be reached is checked when the run clones it (DNS answers change).
 */
export async function checkProjectPath(
  projectPath: string,
  options: ProjectContextOptions,
  caller: PathCaller,
  folders?: TenantFolders,
): Promise<void> {
  try {
    if (projectPath.startsWith('file://') || !isGitUrl(projectPath)) {
      await assertLocalAllowed(localFolder(projectPath), options, caller, folders);
    } else {
      parseGitUrl(projectPath);
    }
  } catch (error) {
    if (error instanceof ProjectPathError) throw badRequest(error.message);
    throw error;
  }
}

function cloneLimits(options: ProjectContextOptions) {
  return {
    cacheDir: options.cacheDir,
    timeoutMs: options.cloneTimeoutMs ?? 60_000,
    maxCloneBytes: options.maxCloneBytes ?? 200 * 1024 * 1024,
    maxCacheBytes: options.maxCacheBytes ?? 1024 * 1024 * 1024,
    refreshMs: options.refreshMs,
    signal: options.signal,
  };
}

/**
 * The folder of a project path, held (not evicted from the clone cache) while `use` works in it, and whether anything
 * may be written there: a local folder, yes; a git URL's clone, shared by every run of that URL, no.
 */
export async function withProjectFolder<T>(
  projectPath: string,
  options: ProjectContextOptions,
  use: (folder: string, writable: boolean) => Promise<T>,
  folders?: TenantFolders,
): Promise<T> {
  const isFileUrl = projectPath.startsWith('file://');
  if (!isFileUrl && isGitUrl(projectPath)) {
    const url = parseGitUrl(projectPath);
    const { addresses } = await resolvePublicHost(url, options.allowedGitHosts ?? []);
    const folder = await cloneIntoCache(url.href, url.shown, { url, addresses }, cloneLimits(options));
    return holding(folder, () => use(folder, false));
  }
  const folder = localFolder(projectPath);
  await assertLocalAllowed(folder, options, undefined, folders);
  const stat = await fs.stat(folder).catch(() => undefined);
  if (!stat) throw new ProjectPathError(`project folder ${folder} does not exist`);
  if (!stat.isDirectory()) throw new ProjectPathError(`project path ${folder} is not a folder`);
  // A file:// URL to a bare repository has no work tree to read: clone it like any other URL.
  const bare =
    isFileUrl &&
    (await fs.access(path.join(folder, 'HEAD')).then(
      () => true,
      () => false,
    ));
  if (!bare) return use(folder, true);
  const clone = await cloneIntoCache(projectPath, projectPath, undefined, cloneLimits(options));
  return holding(clone, () => use(clone, false));
}

/** The root .gitignore, a regular file of the project (a symlink, a FIFO or a device is not read). */
async function readIgnore(dir: string, rules: Ignore): Promise<void> {
  const file = await readRegularFile(path.join(dir, '.gitignore'), MAX_IGNORE_BYTES).catch(() => undefined);
  if (file) rules.add(file.bytes.toString('utf8'));
}

/**
 * The tree, depth-bounded and count-bounded, honouring the root .gitignore; plus the key files found. Symlinks,
 * FIFOs and devices are listed but never followed or opened, and the clone cache is skipped when a folder above it
 * is read.
 */
async function walk(root: string, cacheDir: string): Promise<{ tree: string[]; keyFiles: string[] }> {
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
      if (entry.isDirectory() && path.join(root, rel) === cacheDir) continue;
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
export async function buildProjectContext(
  projectPath: string,
  options: ProjectContextOptions,
  folders?: TenantFolders,
): Promise<string> {
  const shown =
    isGitUrl(projectPath) && !projectPath.startsWith('file://') ? parseGitUrl(projectPath).shown : projectPath;
  return withProjectFolder(
    projectPath,
    options,
    async (folder) => {
      const budget = options.maxChars ?? 16_000;
      const { tree, keyFiles } = await walk(folder, path.resolve(options.cacheDir));
      let text = `Repository ${shown}\n\nStructure:\n${tree.join('\n')}\n`;
      for (const file of keyFiles) {
        if (text.length >= budget) break;
        // As much as the budget can hold, whatever the width of its characters; a file swapped since the walk for
        // anything but a regular file is left out.
        const read = await readRegularFile(path.join(folder, file), budget * 4).catch(() => undefined);
        if (!read) continue;
        const content = read.bytes.toString('utf8');
        const room = budget - text.length - file.length - 20;
        if (room <= 200) break;
        text += `\n--- ${file} ---\n${content.length > room ? `${content.slice(0, room)}\n… (cut)` : content}\n`;
      }
      return text.slice(0, budget);
    },
    folders,
  );
}

/**
 * The real location of a folder an organisation registers, checked: an existing folder under PROJECT_ROOTS, not the
 * clone cache, and overlapping no registered folder (of another organisation, or already of this one). A refusal
 * is a 400, or a 409 for an overlap.
 */
export async function registrableFolder(
  folder: string,
  options: ProjectContextOptions,
  registered: readonly { path: string; sameOrg: boolean }[],
): Promise<string> {
  if (options.allowedRoots.length === 0) {
    throw conflict('folders cannot be registered: PROJECT_ROOTS is not set, so no run may read a local folder');
  }
  const stat = await fs.stat(folder).catch(() => undefined);
  if (!stat?.isDirectory()) throw badRequest(`${folder} is not a folder of this server`);
  try {
    await assertLocalAllowed(folder, options);
  } catch (error) {
    if (error instanceof ProjectPathError) throw badRequest(error.message);
    throw error;
  }
  const real = await realLocation(folder);
  const others = registered.filter((r) => !r.sameOrg).map((r) => r.path);
  const clash = await clashWithOthers(real, folder, others);
  if (clash) throw conflict(clash.replace('project path', 'folder'));
  for (const own of registered.filter((r) => r.sameOrg)) {
    const ownReal = await realLocation(own.path);
    if (inside(real, ownReal) || inside(ownReal, real)) {
      throw conflict(`folder ${folder} overlaps ${own.path}, already a folder of this organisation`);
    }
  }
  return real;
}
