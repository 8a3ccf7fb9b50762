import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProjectContext, isGitUrl } from './project-context';

const temp: string[] = [];
const mkdir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-project-'));
  temp.push(dir);
  return dir;
};
afterAll(() => temp.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function project(): string {
  const dir = mkdir();
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };
  write('README.md', '# Widget service\nIt makes widgets.');
  write('package.json', '{"name":"widgets","scripts":{"test":"vitest"}}');
  write('src/index.ts', 'export const widget = 1;');
  write('src/secret.env', 'TOKEN=hidden');
  write('build/output.js', 'generated');
  write('node_modules/dep/index.js', 'dependency');
  write('.gitignore', 'build/\n*.env\n');
  return dir;
}

const options = () => ({ cacheDir: mkdir(), allowedRoots: null });

describe('project context', () => {
  it('shows the structure without ignored files and includes the key files', async () => {
    const text = await buildProjectContext(project(), options());
    expect(text).toContain('src/');
    expect(text).toContain('index.ts');
    expect(text).not.toContain('secret.env');
    expect(text).not.toContain('output.js');
    expect(text).not.toContain('node_modules');
    expect(text).toContain('--- README.md ---\n# Widget service');
    expect(text).toContain('--- package.json ---');
    expect(text).toContain('--- src/index.ts ---');
  });

  it('stays within its budget', async () => {
    const text = await buildProjectContext(project(), { ...options(), maxChars: 300 });
    expect(text.length).toBeLessThanOrEqual(300);
  });

  it('clones a git URL shallowly (a file:// bare repository) and reads its README', async () => {
    const work = project();
    const bare = path.join(mkdir(), 'widgets.git');
    const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe' });
    git(work, 'init', '-q', '-b', 'main');
    git(work, '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'empty');
    git(work, 'add', '.');
    git(work, '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-m', 'widgets');
    git(work, 'clone', '-q', '--bare', work, bare);
    const cache = mkdir();
    const text = await buildProjectContext(`file://${bare}`, { cacheDir: cache, allowedRoots: null });
    expect(text).toContain('# Widget service');
    expect(fs.readdirSync(cache)).toHaveLength(1);
  });

  it('fails clearly for a missing folder and a failed clone', async () => {
    await expect(buildProjectContext('/no/such/folder', options())).rejects.toThrow(
      'project folder /no/such/folder does not exist',
    );
    await expect(buildProjectContext('https://127.0.0.1:9/nothing.git', options())).rejects.toThrow(
      /^could not clone https:\/\/127\.0\.0\.1:9\/nothing\.git: /,
    );
  });

  it('allows local paths only under PROJECT_ROOTS when asked to', async () => {
    const dir = project();
    await expect(buildProjectContext(dir, { cacheDir: mkdir(), allowedRoots: [] })).rejects.toThrow(
      'local project paths are disabled',
    );
    await expect(buildProjectContext(dir, { cacheDir: mkdir(), allowedRoots: ['/srv/projects'] })).rejects.toThrow(
      `project path ${dir} is outside the allowed folders (PROJECT_ROOTS: /srv/projects)`,
    );
    await expect(
      buildProjectContext(`file://${dir}`, { cacheDir: mkdir(), allowedRoots: ['/srv/projects'] }),
    ).rejects.toThrow('outside the allowed folders');
    expect(await buildProjectContext(dir, { cacheDir: mkdir(), allowedRoots: [path.dirname(dir)] })).toContain(
      'README.md',
    );
  });

  it('tells git URLs from local paths, and never hands an option-like URL to git', async () => {
    expect(isGitUrl('https://example.com/a.git')).toBe(true);
    expect(isGitUrl('git@example.com:team/a.git')).toBe(true);
    expect(isGitUrl('ssh://git@example.com/a.git')).toBe(true);
    expect(isGitUrl('/home/me/project')).toBe(false);
    expect(isGitUrl('--upload-pack=touch /tmp/x')).toBe(false);
    await expect(buildProjectContext('--upload-pack=touch /tmp/pwned', options())).rejects.toThrow('does not exist');
  });
});
