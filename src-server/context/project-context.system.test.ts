import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useFolders } from './folder-fixture';
import { buildProjectContext } from './project-context';

/** The project context of a git URL, cloned by git: the system suite, where git is installed. */

const mkdir = useFolders('svc-project-');

describe('project context of a git URL', () => {
  it('clones a git URL shallowly (a file:// bare repository) and reads its README', async () => {
    const work = mkdir();
    fs.writeFileSync(path.join(work, 'README.md'), '# Widget service\nIt makes widgets.');
    const bare = path.join(mkdir(), 'widgets.git');
    const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe' });
    git(work, 'init', '-q', '-b', 'main');
    git(work, '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'empty');
    git(work, 'add', '.');
    git(work, '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-m', 'widgets');
    git(work, 'clone', '-q', '--bare', work, bare);
    const cache = mkdir();
    const text = await buildProjectContext(`file://${bare}`, { cacheDir: cache, allowedRoots: [] });
    expect(text).toContain('# Widget service');
    expect(fs.readdirSync(cache)).toHaveLength(1);
  });
});
