import { constants } from 'node:fs';
import fs from 'node:fs/promises';

/**
 * Opening a file of a project never waits. A FIFO opened the usual way holds one of libuv's four threads until
 * something opens its other end, and four of them stall every file operation of the process: the studio's files,
 * the other runs' tools and path checks. So a project's file is opened without blocking (O_NONBLOCK), never through
 * a symlink at its last step (O_NOFOLLOW), and read only when it is a regular file, checked on the path before and
 * on the open file after.
 */

const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/**
 * The first `maxBytes` of a regular file and its size, or undefined when the path is anything else: a folder, a
 * FIFO, a socket, a device or a symlink. Rejects as fs does when the path does not exist or cannot be read.
 */
export async function readRegularFile(
  file: string,
  maxBytes: number,
): Promise<{ bytes: Buffer; size: number } | undefined> {
  if (!(await fs.lstat(file)).isFile()) return undefined;
  const handle = await fs.open(file, READ_FLAGS);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return undefined;
    const bytes = Buffer.alloc(Math.min(stat.size, maxBytes));
    let read = 0;
    while (read < bytes.length) {
      const { bytesRead } = await handle.read(bytes, read, bytes.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return { bytes: bytes.subarray(0, read), size: stat.size };
  } finally {
    await handle.close();
  }
}
