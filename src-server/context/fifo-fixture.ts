import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/**
 * FIFOs for the tests that show nothing the service opens waits on one: made, and woken again after the test, so
 * that a read or write the code under test left waiting (when it fails) ends instead of holding a thread.
 */

export function makeFifo(file: string): string {
  execFileSync('mkfifo', [file]);
  return file;
}

/** Wakes whatever waits on `fifo`: a reader waits for a writer, a writer for a reader. */
export function release(fifo: string): void {
  for (const flags of [fs.constants.O_RDONLY, fs.constants.O_WRONLY]) {
    try {
      fs.closeSync(fs.openSync(fifo, flags | fs.constants.O_NONBLOCK));
    } catch {
      // No reader for a writer to meet: nothing waits on that side.
    }
  }
}

/** `pending`, or a rejection once `ms` have passed: a call that waits fails its test rather than holding it. */
export function within<T>(ms: number, pending: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([pending, late]).finally(() => clearTimeout(timer));
}
