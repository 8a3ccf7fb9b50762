import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/** For tests: a maker of temporary folders (symlinks resolved), removed after the test file. */
export function useFolders(prefix = 'svc-tools-'): () => string {
  const made: string[] = [];
  afterAll(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));
  return () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
    made.push(dir);
    return dir;
  };
}
