import fs from 'node:fs/promises';
import path from 'node:path';
import { create as createTar, Unpack, type ReadEntry } from 'tar';

/**
 * What a backup is written to (db/backup.ts): a folder, or a `.tar.gz` archive. Names are relative, with `/`
 * between their parts. Files are written private to the current user (0600, folders 0700): a backup holds the
 * database and the keys beside it.
 */
export interface BackupWriter {
  directory(name: string): Promise<void>;
  /** Copies a file as it is now; false when it has gone (a table dropped while a running database is copied). */
  file(name: string, source: string): Promise<boolean>;
  data(name: string, content: Buffer | string): Promise<void>;
  /** Finishes the backup: only then is it complete. */
  close(): Promise<void>;
  /** Stops writing after a failure; the caller removes what was written. */
  abort(): Promise<void>;
}

const isGone = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** A backup as a folder: the files copied as they are. */
export async function folderWriter(root: string): Promise<BackupWriter> {
  await fs.mkdir(root, { mode: 0o700 });
  return writerInto(root);
}

/** Writes into the existing folder `root`; the folder of a file is made when it is missing. */
function writerInto(root: string): BackupWriter {
  const full = async (name: string) => {
    const target = path.join(root, ...name.split('/'));
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    return target;
  };
  return {
    directory: async (name) => {
      await fs.mkdir(path.join(root, ...name.split('/')), { recursive: true, mode: 0o700 });
    },
    async file(name, source) {
      const target = await full(name);
      try {
        await fs.copyFile(source, target, fs.constants.COPYFILE_EXCL);
      } catch (error) {
        if (isGone(error)) return false;
        throw error;
      }
      await fs.chmod(target, 0o600);
      return true;
    },
    data: async (name, content) => fs.writeFile(await full(name), content, { mode: 0o600, flag: 'wx' }),
    close: () => Promise.resolve(),
    abort: () => Promise.resolve(),
  };
}

/**
 * A backup as a gzip-compressed tar archive, written with node-tar: the backup is first written as a folder private
 * to the user beside `file` (`.<name>-…`, 0700), which close() packs into `file` and then removes. `file` is created
 * at once (0600, never over a file that exists).
 */
export async function archiveWriter(file: string): Promise<BackupWriter> {
  await (await fs.open(file, 'wx', 0o600)).close();
  let staging: string;
  try {
    staging = await fs.mkdtemp(path.join(path.dirname(file), `.${path.basename(file)}-`));
  } catch (error) {
    await fs.rm(file, { force: true });
    throw error;
  }
  const removeStaging = () => fs.rm(staging, { recursive: true, force: true });
  return {
    ...writerInto(staging),
    async close() {
      const names = (await fs.readdir(staging)).sort();
      // strict: a file that cannot be read fails the backup rather than being left out with a warning.
      await createTar({ file, cwd: staging, gzip: true, portable: true, strict: true, mode: 0o600 }, names);
      await removeStaging();
    },
    abort: removeStaging,
  };
}

export class ArchiveError extends Error {
  override name = 'ArchiveError';
}

/** What node-tar adds to the errors it raises (its warnings, in strict mode). */
interface TarError extends Error {
  tarCode?: string;
  path?: string;
}

/**
 * Unpacks a backup archive written by archiveWriter() into `into` (which it creates): folders 0700, files 0600.
 * Only folders and files are taken; an absolute name or one with `..` is refused (node-tar would strip or skip it),
 * as is a damaged or cut-off archive. When it fails, what was unpacked is left for the caller to remove.
 */
export async function extractArchive(file: string, into: string): Promise<void> {
  await fs.mkdir(into, { recursive: true, mode: 0o700 });
  let refusal: ArchiveError | undefined;
  let failure: TarError | undefined;
  const unpack = new Unpack({
    cwd: into,
    // Every warning (a name stripped or skipped, a bad header, a cut-off archive) is an error.
    strict: true,
    preserveOwner: false,
    dmode: 0o700,
    // A data folder's zero-filled WAL segments compress nearly as far as gzip goes (about 1030:1), beyond node-tar's
    // default limit of 1000 against archive bombs.
    maxDecompressionRatio: Infinity,
    filter: (name, entry) => {
      const { type } = entry as ReadEntry;
      if (type === 'File' || type === 'OldFile' || type === 'Directory') return true;
      refusal ??= new ArchiveError(`the archive holds an entry of a kind a backup never has: ${name} (${type})`);
      return false;
    },
  });
  // Fed here rather than by tar.x({ file }), whose promise fails at the first error while node-tar goes on writing to
  // the end of the archive (strict mode): this waits until it is done, at 'close', or at once when it aborts (the
  // compressed data is damaged), so that the caller can remove what was written.
  let stopped = false;
  const done = new Promise<void>((resolve) => {
    unpack.on('close', resolve);
    unpack.on('error', (error: TarError) => {
      failure ??= error;
      if (error.tarCode === 'TAR_ABORT') resolve();
    });
  }).then(() => {
    stopped = true;
  });
  const input = await fs.open(file, 'r');
  try {
    for await (const chunk of input.createReadStream({ autoClose: false })) {
      if (stopped) break;
      if (!unpack.write(chunk as Buffer)) {
        await Promise.race([new Promise((resolve) => unpack.once('drain', resolve)), done]);
      }
    }
    unpack.end();
  } catch (error) {
    unpack.abort(error as Error);
  } finally {
    await input.close();
  }
  await done;

  if (refusal) throw refusal;
  if (failure) throw archiveError(file, failure);
  await settleModes(into);
}

function archiveError(file: string, error: TarError): Error {
  const message = error.message.replace(/^TAR_[A-Z_]+: /, '');
  if (/contains '\.\.'|from absolute path|escaped extraction target/.test(message)) {
    return new ArchiveError(`the archive names a path outside the backup: ${JSON.stringify(error.path)}`);
  }
  if (/^Truncated input/.test(message)) return new ArchiveError(`${file} is incomplete: ${message}`);
  // The disk rather than the archive (full, or not writable): node-tar's error keeps the system call's.
  if ('syscall' in error) return error;
  return new ArchiveError(`${file} is not a backup archive, or it is damaged or incomplete: ${message}`);
}

/** Folders 0700 and files 0600, whatever the archive said. */
async function settleModes(dir: string): Promise<void> {
  await fs.chmod(dir, 0o700);
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await settleModes(full);
    else await fs.chmod(full, 0o600);
  }
}
