import fs from 'node:fs/promises';
import path from 'node:path';
import { readRegularFile } from '../context/regular-file';
import { isInside } from './project-paths';
import { ToolCallError } from './tool-result';

/**
 * Which repository git may read for a project: the project's own `.git` folder, and nothing it leads to out of the
 * project folder. git follows a `.git` symlink or a `.git` file (`gitdir: <anywhere>`), a `commondir` naming
 * another repository's folder, `objects/info/alternates` naming other object folders, and any symlink inside
 * `.git`: each would show commits and files of a repository the project's readers may not read.
 */

const NOT_A_REPOSITORY = 'the project folder is not a git repository';
const OWN_FOLDER_ONLY = 'git reads only a .git folder of the project itself';
/** As git: alternates of alternates are followed this deep, no deeper. */
const MAX_ALTERNATE_DEPTH = 5;
const POINTER_BYTES = 64 * 1024;

const reachesOut = (realRoot: string, what: string) =>
  new ToolCallError(
    `the project's repository reaches out of the project folder (${path.relative(realRoot, what)}): git is not ` +
      'run on it',
  );

/**
 * `<project>/.git`, once it is known to be a folder of the project (not a symlink, not a file naming another) whose
 * common folder, object folders and symlinks all stay inside the project folder.
 */
export async function projectGitFolder(realRoot: string): Promise<string> {
  const gitDir = path.join(realRoot, '.git');
  const stat = await fs.lstat(gitDir).catch(() => undefined);
  if (stat?.isSymbolicLink()) throw new ToolCallError(`the project's .git is a symlink: ${OWN_FOLDER_ONLY}`);
  if (stat?.isFile()) {
    throw new ToolCallError(
      `the project's .git is a file naming a repository elsewhere (a linked worktree or a submodule): ${OWN_FOLDER_ONLY}`,
    );
  }
  if (!stat?.isDirectory()) throw new ToolCallError(NOT_A_REPOSITORY);
  await symlinksStayInside(realRoot, gitDir);
  const commondirFile = path.join(gitDir, 'commondir');
  const commondir = await pointer(realRoot, commondirFile);
  // git reads the whole file as one path, its line end dropped.
  const commonDir =
    commondir === undefined
      ? gitDir
      : await folderInside(realRoot, gitDir, commondir.replace(/[\r\n]+$/, ''), commondirFile);
  if (commonDir !== gitDir) await symlinksStayInside(realRoot, commonDir);
  await alternatesStayInside(realRoot, path.join(commonDir, 'objects'), 0);
  return gitDir;
}

/** Refuses a symlink under `folder` that leads out of the project, dangling or not. */
async function symlinksStayInside(realRoot: string, folder: string): Promise<void> {
  // A folder that is not there is read by nobody (git skips a missing alternate).
  const entries = await fs.readdir(folder, { recursive: true, withFileTypes: true }).catch((error: unknown) => {
    if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return [];
    throw error;
  });
  for (const entry of entries) {
    if (!entry.isSymbolicLink()) continue;
    const link = path.join(entry.parentPath, entry.name);
    const target = await fs.realpath(link).catch(async () => path.resolve(path.dirname(link), await fs.readlink(link)));
    if (!isInside(target, realRoot)) throw reachesOut(realRoot, link);
  }
}

/**
 * The object folders that `alternates` of `objects` name, one a line, relative to `objects` unless absolute (blank
 * lines and `#` comments skipped, as git does), each checked as `objects` itself is, as deep as git follows them. A
 * quoted line is refused: git unquotes it, this check does not.
 */
async function alternatesStayInside(realRoot: string, objects: string, depth: number): Promise<void> {
  if (depth > MAX_ALTERNATE_DEPTH) return;
  const file = path.join(objects, 'info', 'alternates');
  const text = await pointer(realRoot, file);
  for (const line of text?.split('\n') ?? []) {
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('"')) throw reachesOut(realRoot, file);
    const alternate = await folderInside(realRoot, objects, line, file);
    await symlinksStayInside(realRoot, alternate);
    await alternatesStayInside(realRoot, alternate, depth + 1);
  }
}

/** Where `named` leads from `base` (symlinks resolved where it exists), refused in `file`'s name when out. */
async function folderInside(realRoot: string, base: string, named: string, file: string): Promise<string> {
  const folder = path.resolve(base, named);
  const real = await fs.realpath(folder).catch(() => folder);
  if (!isInside(real, realRoot)) throw reachesOut(realRoot, file);
  return real;
}

/** The text of one of git's pointer files, or undefined without one; anything but a small regular file is refused. */
async function pointer(realRoot: string, file: string): Promise<string | undefined> {
  const read = await readRegularFile(file, POINTER_BYTES).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (read === null) return undefined;
  if (read === undefined || read.size > POINTER_BYTES) throw reachesOut(realRoot, file);
  return read.bytes.toString('utf8');
}
