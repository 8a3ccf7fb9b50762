import fs from 'node:fs/promises';
import path from 'node:path';
import { ToolCallError } from './tool-result';

/**
 * Paths a model names, inside the run's project folder. Every path is relative to the folder; the answer is
 * refused when the path, written or resolved (symlinks followed), leads out of it.
 */

const outside = (input: string) =>
  new ToolCallError(`${input} is outside the project: paths are relative to the project folder and stay inside it`);

/** Whether `child` is `root` or lies under it (both absolute, resolved). */
export function isInside(child: string, root: string): boolean {
  const relative = path.relative(root, child);
  return relative === '' || (relative.split(path.sep)[0] !== '..' && !path.isAbsolute(relative));
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/** The project folder, symlinks resolved: every resolved path is compared with it. */
export async function realProjectRoot(root: string): Promise<string> {
  const real = await fs.realpath(root).catch(() => undefined);
  if (!real || !(await fs.stat(real)).isDirectory()) {
    throw new ToolCallError('the project folder does not exist (any more)');
  }
  return real;
}

/**
 * A path as written, normalised and checked without the disk: `.` for the folder itself, no absolute path, no `..`
 * that leaves the folder. What git reads (a commit's files, a pathspec) needs no more than this: git reads objects,
 * and in the work tree it never follows a symlink.
 */
export function projectRelative(input: string): string {
  if (input.includes('\0')) throw new ToolCallError('a path cannot contain a NUL character');
  if (path.isAbsolute(input)) throw outside(input);
  const normal = path.normalize(input === '' ? '.' : input).replace(/\/+$/, '');
  if (normal === '..' || normal.startsWith('../')) throw outside(input);
  return normal === '' ? '.' : normal;
}

/** An existing path's real location inside the project, and the path as the model shows it. */
export async function resolveExisting(realRoot: string, input: string): Promise<{ real: string; shown: string }> {
  const shown = projectRelative(input);
  let real: string;
  try {
    real = await fs.realpath(path.join(realRoot, shown));
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new ToolCallError(`${shown} does not exist in the project`);
    throw error;
  }
  if (!isInside(real, realRoot)) throw outside(input);
  return { real, shown };
}

/** A path inside git's own folder: writing there (config, hooks) would make the next git command run anything. */
const inGitFolder = (relative: string) => relative.split(path.sep).some((part) => part.toLowerCase() === '.git');

/**
 * Where a file may be written: its real location inside the project, through symlinks that stay inside, and never
 * in a `.git` folder. For a new file, the nearest part of the path that exists must lie inside; the folders
 * missing under it are created here, and checked again once they exist.
 */
export async function resolveForWrite(realRoot: string, input: string): Promise<{ real: string; shown: string }> {
  const shown = projectRelative(input);
  if (shown === '.') throw new ToolCallError('write_file needs a file path, not the project folder');
  const refuseGit = (real: string) => {
    if (inGitFolder(shown) || inGitFolder(path.relative(realRoot, real))) {
      throw new ToolCallError(`${shown} is inside a .git folder, which is never written: git would run what it says`);
    }
  };
  const target = path.join(realRoot, shown);
  const existing = await fs.lstat(target).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (existing) {
    // An existing file, or a symlink to one: the write goes to the real file, which must be inside.
    const real = await fs.realpath(target).catch(() => {
      throw outside(input);
    });
    if (!isInside(real, realRoot)) throw outside(input);
    refuseGit(real);
    return { real, shown };
  }
  const folder = path.dirname(target);
  // A dangling symlink there leads nowhere that can be checked: it counts as leading out.
  const existingPart = await nearestExisting(folder);
  const realPart = await fs.realpath(existingPart).catch(() => undefined);
  if (!realPart || !isInside(realPart, realRoot)) throw outside(input);
  refuseGit(path.join(realPart, path.relative(existingPart, target)));
  await fs.mkdir(folder, { recursive: true });
  // The folders now exist: resolve them again, in case one of them was swapped for a symlink meanwhile.
  const realFolder = await fs.realpath(folder);
  if (!isInside(realFolder, realRoot)) throw outside(input);
  const real = path.join(realFolder, path.basename(target));
  refuseGit(real);
  return { real, shown };
}

/** The nearest part of `folder` that exists (a symlink counts, dangling or not). */
async function nearestExisting(folder: string): Promise<string> {
  for (let current = folder; ; current = path.dirname(current)) {
    const exists = await fs.lstat(current).then(
      () => true,
      () => false,
    );
    if (exists || path.dirname(current) === current) return current;
  }
}
