import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../contracts/errors';
import { makeFifo, release, within } from './fifo-fixture';
import { parseGitUrl, withoutCredentials } from './git-url';
import { useFolders } from './folder-fixture';
import { buildProjectContext, checkProjectPath, isGitUrl, type ProjectContextOptions } from './project-context';

const mkdir = useFolders('svc-project-');

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

const options = (extra: Partial<ProjectContextOptions> = {}): ProjectContextOptions => ({
  cacheDir: mkdir(),
  allowedRoots: [],
  ...extra,
});
const ADMIN = { instanceAdmin: true };
const MEMBER = { instanceAdmin: false };

/** The 400 a refused path gets when a run starts or a thread is created, or undefined when it is allowed. */
async function refusal(projectPath: string, opts: ProjectContextOptions, caller = MEMBER) {
  try {
    await checkProjectPath(projectPath, opts, caller);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).status).toBe(400);
    return (error as ServiceError).message;
  }
}

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
    const text = await buildProjectContext(project(), options({ maxChars: 300 }));
    expect(text.length).toBeLessThanOrEqual(300);
  });

  it('never follows a symlink out of the project: a README that points at /etc/passwd is not read', async () => {
    const dir = project();
    fs.rmSync(path.join(dir, 'README.md'));
    fs.symlinkSync('/etc/passwd', path.join(dir, 'README.md'));
    fs.symlinkSync('/etc', path.join(dir, 'src', 'etc'));
    const text = await buildProjectContext(dir, options());
    expect(text).not.toContain('root:');
    expect(text).not.toContain('--- README.md ---');
    expect(text).not.toContain('passwd');
  });

  it('never follows a .gitignore that is a symlink', async () => {
    const dir = project();
    const outside = mkdir();
    fs.writeFileSync(path.join(outside, 'rules'), 'src/\n');
    fs.rmSync(path.join(dir, '.gitignore'));
    fs.symlinkSync(path.join(outside, 'rules'), path.join(dir, '.gitignore'));
    const text = await buildProjectContext(dir, options());
    // The rules the symlink leads to are not read: src/ stays, and so does what the project's own rules left out.
    expect(text).toContain('index.ts');
    expect(text).toContain('secret.env');
  });

  it('never opens a .gitignore or a key file that is not a regular file: a FIFO holds nothing', async () => {
    const dir = project();
    fs.rmSync(path.join(dir, '.gitignore'));
    fs.rmSync(path.join(dir, 'README.md'));
    const fifos = ['.gitignore', 'README.md', 'src/main.ts'].map((file) => path.join(dir, file));
    for (const fifo of fifos) makeFifo(fifo);
    try {
      const text = await within(2000, buildProjectContext(dir, options()));
      expect(text).toContain('README.md');
      expect(text).not.toContain('--- README.md ---');
      expect(text).not.toContain('--- src/main.ts ---');
      expect(text).toContain('--- package.json ---');
    } finally {
      fifos.forEach(release);
    }
  });

  it('fails clearly for a missing folder', async () => {
    await expect(buildProjectContext('/no/such/folder', options())).rejects.toThrow(
      'project folder /no/such/folder does not exist',
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

describe('who may name a local folder', () => {
  it('with PROJECT_ROOTS unset: only the instance administrator', async () => {
    const dir = project();
    expect(await refusal(dir, options())).toBe(
      'local project paths are disabled: set PROJECT_ROOTS to the folders runs may read ' +
        '(without it, only the instance administrator may name a local folder)',
    );
    expect(await refusal(`file://${dir}`, options())).toMatch(/^local project paths are disabled/);
    for (const elsewhere of ['/etc', '/proc/self/cwd']) {
      expect(await refusal(elsewhere, options())).toMatch(/^local project paths are disabled/);
    }
    expect(await refusal(dir, options(), ADMIN)).toBeUndefined();
  });

  it('with PROJECT_ROOTS set: inside them for everyone, outside them for no one, symlinks resolved first', async () => {
    const root = mkdir();
    const inside = path.join(root, 'team-a');
    fs.mkdirSync(inside);
    fs.symlinkSync('/etc', path.join(root, 'escape'));
    const opts = options({ allowedRoots: [root] });
    expect(await refusal(inside, opts)).toBeUndefined();
    expect(await refusal(`file://${inside}`, opts)).toBeUndefined();
    for (const caller of [MEMBER, ADMIN]) {
      for (const outside of [
        '/etc',
        path.join(root, 'escape'),
        path.join(root, 'team-a', '..', '..'),
        '/proc/self/cwd',
      ]) {
        expect(await refusal(outside, opts, caller), outside).toMatch(
          /is outside the allowed folders \(PROJECT_ROOTS: /,
        );
      }
    }
    expect(await refusal('/etc', opts)).toBe(
      `project path /etc is outside the allowed folders (PROJECT_ROOTS: ${root})`,
    );
    // The same rule when the run executes, whoever started it.
    await expect(buildProjectContext('/etc', opts)).rejects.toThrow('is outside the allowed folders');
    expect(await buildProjectContext(inside, opts)).toContain('Structure:');
  });

  it('never the clone cache, not even for the administrator, however it is named', async () => {
    const root = mkdir();
    const cacheDir = path.join(root, 'data', 'repositories');
    const clone = path.join(cacheDir, '0123456789abcdef');
    fs.mkdirSync(clone, { recursive: true });
    fs.writeFileSync(path.join(clone, 'README.md'), 'another tenant');
    fs.symlinkSync(clone, path.join(root, 'innocent'));
    for (const opts of [options({ cacheDir }), options({ cacheDir, allowedRoots: [root] })]) {
      for (const named of [
        clone,
        cacheDir,
        `file://${clone}`,
        path.join(root, 'innocent'),
        `${cacheDir}/x/../0123456789abcdef`,
      ]) {
        expect(await refusal(named, opts, ADMIN), named).toMatch(
          /is inside the server's clone cache, which is never read$/,
        );
        await expect(buildProjectContext(named, opts)).rejects.toThrow("inside the server's clone cache");
      }
    }
    // A folder above the cache may be read, without the cache in it.
    const text = await buildProjectContext(root, options({ cacheDir }));
    expect(text).toContain('data/');
    expect(text).not.toContain('0123456789abcdef');
  });
});

describe('git URLs', () => {
  it('refuse credentials, which would be stored, shown and logged: a 400 that does not repeat them', async () => {
    for (const url of [
      'https://alice:s3cret-token@git.example.com/team/repo.git',
      'https://ghp_0123456789abcdef@github.com/team/repo.git',
      'http://user:pass@git.example.com/repo.git',
      'ssh://git:s3cret-token@git.example.com/repo.git',
      'git://user@git.example.com/repo.git',
    ]) {
      const message = await refusal(url, options(), ADMIN);
      expect(message, url).toMatch(/carries credentials/);
      expect(message).not.toMatch(/s3cret|ghp_|alice|user:pass/);
    }
    for (const url of [
      'ssh://git@git.example.com/team/repo.git',
      'git@github.com:team/repo.git',
      'https://github.com/a/b',
    ]) {
      expect(await refusal(url, options()), url).toBeUndefined();
    }
    expect(withoutCredentials('https://a:b@h.example/x')).toBe('https://h.example/x');
  });

  it('read the host the way git will connect to it', () => {
    expect(parseGitUrl('http://2130706433:5432/')).toMatchObject({ host: '127.0.0.1', port: 5432 });
    expect(parseGitUrl('https://[::ffff:127.0.0.1]/x')).toMatchObject({ host: '::ffff:7f00:1', port: 443 });
    expect(parseGitUrl('git@github.com:team/repo.git')).toMatchObject({ scheme: 'ssh', host: 'github.com', port: 22 });
    expect(parseGitUrl('ssh://git@10.0.0.5:2222/repo')).toMatchObject({ scheme: 'ssh', host: '10.0.0.5', port: 2222 });
  });
});
