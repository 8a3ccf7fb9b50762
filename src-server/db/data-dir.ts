import fs from 'node:fs/promises';
import { getLogger } from '../log';

const log = getLogger('svc.db');

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/**
 * The mode of DATA_DIR: private to the current user (0700). As root the embedded PostgreSQL runs as the
 * `postgres` user, which must pass through DATA_DIR to its own data folder: 0711, enter but not list.
 */
export function dataDirMode(): number {
  return process.getuid?.() === 0 ? 0o711 : 0o700;
}

/**
 * Creates `dir` with `mode` (unless `create` is false and it does not exist), and sets an existing folder whose
 * mode differs back to `mode`, with a log line. A folder someone else owns, or a shared one (world-writable or
 * sticky, such as /tmp), is left alone with a warning: changing it would break others. No-op on Windows.
 */
export async function ensureFolderMode(
  dir: string,
  mode: number,
  { create = true, owner = process.getuid?.() }: { create?: boolean; owner?: number } = {},
): Promise<void> {
  if (process.platform === 'win32') {
    if (create) await fs.mkdir(dir, { recursive: true });
    return;
  }
  if (create) await fs.mkdir(dir, { recursive: true, mode });
  let stat;
  try {
    stat = await fs.stat(dir);
  } catch (error) {
    if (!create && (error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((stat.mode & 0o777) === mode) return;
  if (stat.uid !== owner) {
    log.warn(`${dir} belongs to another user (uid ${stat.uid}): its mode ${octal(stat.mode)} is left as it is`);
    return;
  }
  if ((stat.mode & 0o1002) !== 0) {
    log.warn(`${dir} is a shared folder (mode ${octal(stat.mode)}): left as it is; choose a folder of your own`);
    return;
  }
  await fs.chmod(dir, mode);
  log.info(`set the mode of ${dir} to ${octal(mode)} (it was ${octal(stat.mode)})`);
}
