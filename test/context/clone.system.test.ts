import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheFolder, holding } from '../../src-server/context/clone-cache';
import { buildProjectContext, type ProjectContextOptions } from '../../src-server/context/project-context';
import { startGitHttpServer } from '../fixtures/git-http-server';
import { startSilentServer, type SilentServer } from '../helpers/silent-server';

/** Clones by git, the system suite's: over smart HTTP and file://, bounded, cancelled, refreshed. */

const temp: string[] = [];
const mkdir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-clone-'));
  temp.push(dir);
  return dir;
};
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
  temp.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
});

/** A bare repository `<root>/<name>.git` with a README and the given extra files. */
function repository(root: string, name: string, files: Record<string, string | Buffer> = {}): string {
  const work = mkdir();
  for (const [file, content] of Object.entries({ 'README.md': `# ${name}\n`, ...files })) {
    fs.writeFileSync(path.join(work, file), content);
  }
  const git = (...args: string[]) => execFileSync('git', args, { cwd: work, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-m', name);
  const bare = path.join(root, `${name}.git`);
  git('clone', '-q', '--bare', work, bare);
  return bare;
}

/** A silent server (see startSilentServer) that the file's afterAll closes. */
async function silentServer(): Promise<SilentServer> {
  const server = await startSilentServer();
  closers.push(server.close);
  return server;
}

const options = (extra: Partial<ProjectContextOptions> = {}): ProjectContextOptions => ({
  cacheDir: path.join(mkdir(), 'repositories'),
  allowedRoots: [],
  ...extra,
});
const cached = (opts: ProjectContextOptions) => (fs.existsSync(opts.cacheDir) ? fs.readdirSync(opts.cacheDir) : []);
/** Bytes of every file in the clone cache, counted here rather than by the server. */
const cacheBytes = (opts: ProjectContextOptions) =>
  fs
    .readdirSync(opts.cacheDir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + fs.statSync(path.join(entry.parentPath, entry.name)).size, 0);
/** The README of each clone in the cache, sorted: which repositories it holds. */
const cachedReadmes = (opts: ProjectContextOptions) =>
  cached(opts)
    .map((folder) => fs.readFileSync(path.join(opts.cacheDir, folder, 'README.md'), 'utf8'))
    .sort();

describe('git URLs and the server’s own network', () => {
  it('clones from a host GIT_ALLOWED_HOSTS names, over smart HTTP, pinned to the addresses it checked', async () => {
    const root = mkdir();
    repository(root, 'gizmo', { 'package.json': '{"name":"gizmo"}' });
    const server = await startGitHttpServer(root);
    closers.push(server.close);
    for (const [host, url] of [
      ['127.0.0.1', `${server.url}/gizmo.git`],
      ['localhost', `http://localhost:${server.port}/gizmo.git`],
    ]) {
      const opts = options({ allowedGitHosts: [host!] });
      const text = await buildProjectContext(url!, opts);
      expect(text).toContain('# gizmo');
      expect(text).toContain('--- package.json ---');
      expect(cached(opts)).toHaveLength(1);
    }
  });

  it('says only "could not clone <url>": a closed port, a web server and a git server look the same', async () => {
    const closed = await silentServer();
    const port = closed.port;
    await closers.pop()!();
    const web = await startGitHttpServer(mkdir());
    closers.push(web.close);
    const opts = options({ allowedGitHosts: ['127.0.0.1'], cloneTimeoutMs: 10_000 });
    for (const url of [`http://127.0.0.1:${port}/nothing.git`, `${web.url}/nothing.git`]) {
      const error = await buildProjectContext(url, opts).catch((e: Error) => e);
      expect(error).toMatchObject({ name: 'ProjectPathError', message: `could not clone ${url}` });
    }
    expect(cached(opts)).toEqual([]);
  });

  it('follows no redirect: a redirect could lead anywhere after the check', async () => {
    const root = mkdir();
    repository(root, 'target');
    const target = await startGitHttpServer(root);
    const redirect = await startGitHttpServer(mkdir(), { redirectTo: target.url });
    closers.push(target.close, redirect.close);
    const url = `${redirect.url}/target.git`;
    await expect(buildProjectContext(url, options({ allowedGitHosts: ['127.0.0.1'] }))).rejects.toThrow(
      `could not clone ${url}`,
    );
    expect(redirect.requests).toBeGreaterThan(0);
    expect(target.requests).toBe(0);
  });
});

describe('a clone runs nothing the repository picks', () => {
  it("checks out with no filter or hook, whichever of the server's own its .gitattributes names", async () => {
    const root = mkdir();
    const bare = repository(root, 'picky', {
      '.gitattributes': '*.md filter=spy\n*.txt filter=lfs\n',
      'notes.txt': 'plain notes\n',
    });
    // The server's own git configuration, as an operator may have it: a filter, LFS, hooks and a template.
    const markers = mkdir();
    const spies = mkdir();
    const spy = (name: string) => {
      const script = path.join(spies, name);
      fs.writeFileSync(script, `#!/bin/sh\ntouch '${markers}/${name}'\ncat\n`, { mode: 0o755 });
      return script;
    };
    const hooks = mkdir();
    for (const hook of ['post-checkout', 'reference-transaction']) fs.copyFileSync(spy(hook), path.join(hooks, hook));
    const template = mkdir();
    fs.writeFileSync(path.join(template, 'config'), `[filter "spy"]\n\tsmudge = ${spy('template-smudge')}\n`);
    const globalConfig = path.join(mkdir(), 'gitconfig');
    fs.writeFileSync(
      globalConfig,
      `[filter "spy"]\n\tsmudge = ${spy('smudge')}\n\tprocess = ${spy('process')}\n\trequired = true\n` +
        `[filter "lfs"]\n\tsmudge = ${spy('lfs-smudge')}\n\trequired = true\n` +
        `[core]\n\thooksPath = ${hooks}\n[init]\n\ttemplateDir = ${template}\n`,
    );
    const before = process.env.GIT_CONFIG_GLOBAL;
    process.env.GIT_CONFIG_GLOBAL = globalConfig;
    try {
      const opts = options();
      const text = await buildProjectContext(`file://${bare}`, opts);
      expect(text).toContain('# picky');
      const [clone] = cached(opts);
      expect(fs.readFileSync(path.join(opts.cacheDir, clone!, 'notes.txt'), 'utf8')).toBe('plain notes\n');
    } finally {
      if (before === undefined) delete process.env.GIT_CONFIG_GLOBAL;
      else process.env.GIT_CONFIG_GLOBAL = before;
    }
    expect(fs.readdirSync(markers)).toEqual([]);
  });
});

describe('the clone cache is bounded', () => {
  it('stops a clone as soon as it passes the limit, not after it is all on disk', async () => {
    const root = mkdir();
    repository(root, 'heavy', { 'data.bin': randomBytes(24 * 1024 * 1024) });
    const slow = await startGitHttpServer(root, { bytesPerSecond: 4 * 1024 * 1024 });
    closers.push(slow.close);
    const opts = options({ allowedGitHosts: ['127.0.0.1'], maxCloneBytes: 2 * 1024 * 1024 });
    await expect(buildProjectContext(`${slow.url}/heavy.git`, opts)).rejects.toThrow(
      `${slow.url}/heavy.git is larger than the 2 MiB limit for project context`,
    );
    // Stopped early: most of the 24 MiB pack was never sent, and nothing is left in the cache.
    expect(slow.bytesSent).toBeLessThan(12 * 1024 * 1024);
    expect(cached(opts)).toEqual([]);
  });

  it('refuses a work tree larger than the limit before writing it (a small pack of zeros)', async () => {
    const root = mkdir();
    const bare = repository(root, 'zeros', { 'zeros.bin': Buffer.alloc(64 * 1024 * 1024) });
    const opts = options({ maxCloneBytes: 2 * 1024 * 1024 });
    await expect(buildProjectContext(`file://${bare}`, opts)).rejects.toThrow('is larger than the 2 MiB limit');
    expect(cached(opts)).toEqual([]);
  });

  it('evicts the least recently used clones when the cache passes its total size', async () => {
    const root = mkdir();
    const [a, b, c] = ['a', 'b', 'c'].map(
      // About 1 MiB a clone: its 512 KiB file, and the same again in its pack.
      (name) => `file://${repository(root, name, { 'blob.bin': randomBytes(512 * 1024) })}`,
    );
    const opts = options({ maxCacheBytes: Math.round(2.5 * 1024 * 1024) });
    await buildProjectContext(a!, opts);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await buildProjectContext(b!, opts);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await buildProjectContext(a!, opts); // a is used again: b is now the least recently used
    await new Promise((resolve) => setTimeout(resolve, 20));
    await buildProjectContext(c!, opts);
    expect(cachedReadmes(opts)).toEqual(['# a\n', '# c\n']);
    expect(cacheBytes(opts)).toBeLessThanOrEqual(opts.maxCacheBytes!);
  });

  it('refuses a clone larger than the whole cache, even below the limit of one clone', async () => {
    const root = mkdir();
    // About 1.5 MiB: its 768 KiB file, and the same again in its pack.
    const url = `file://${repository(root, 'wide', { 'blob.bin': randomBytes(768 * 1024) })}`;
    const opts = options({ maxCacheBytes: 1024 * 1024 });
    await expect(buildProjectContext(url, opts)).rejects.toThrow(
      `${url} is larger than the 1 MiB limit for project context (the whole clone cache, GIT_CACHE_MAX_MB)`,
    );
    expect(cached(opts)).toEqual([]);
  });

  it('stays within its limit when the clones it holds are being read: the new clone is refused until they are done', async () => {
    const root = mkdir();
    const [a, b, c] = ['a', 'b', 'c'].map(
      (name) => `file://${repository(root, name, { 'blob.bin': randomBytes(512 * 1024) })}`,
    );
    const opts = options({ maxCacheBytes: Math.round(2.5 * 1024 * 1024) });
    await buildProjectContext(a!, opts);
    await buildProjectContext(b!, opts);
    let finishReading = () => {};
    const reading = new Promise<void>((resolve) => (finishReading = resolve));
    // Two runs read a and b: neither may be evicted, and c does not fit beside them.
    const readers = [a!, b!].map((url) => holding(cacheFolder(opts.cacheDir, url), () => reading));
    await expect(buildProjectContext(c!, opts)).rejects.toThrow(
      `${c} does not fit in the 2.5 MiB clone cache (GIT_CACHE_MAX_MB) beside the clones that runs are reading now: try again when they have finished`,
    );
    expect(cachedReadmes(opts)).toEqual(['# a\n', '# b\n']);
    expect(cacheBytes(opts)).toBeLessThanOrEqual(opts.maxCacheBytes!);

    finishReading();
    await Promise.all(readers);
    expect(await buildProjectContext(c!, opts)).toContain('# c');
    expect(cachedReadmes(opts)).toEqual(['# b\n', '# c\n']);
    expect(cacheBytes(opts)).toBeLessThanOrEqual(opts.maxCacheBytes!);
  });

  it('stays within its limit when clones finish together, and every run reads its own', async () => {
    const root = mkdir();
    const names = ['p', 'q', 'r', 's', 't', 'u'];
    const urls = names.map((name) => `file://${repository(root, name, { 'blob.bin': randomBytes(512 * 1024) })}`);
    const opts = options({ maxCacheBytes: Math.round(2.5 * 1024 * 1024) });
    const texts = await Promise.all(urls.map((url) => buildProjectContext(url, opts)));
    texts.forEach((text, i) => expect(text).toContain(`# ${names[i]}`));
    expect(cached(opts)).toHaveLength(2);
    expect(cacheBytes(opts)).toBeLessThanOrEqual(opts.maxCacheBytes!);
  });
});

describe('cancelling a run', () => {
  it('stops its clone at once, helpers and connection included', async () => {
    const silent = await silentServer();
    const controller = new AbortController();
    const url = `http://127.0.0.1:${silent.port}/stuck.git`;
    const opts = options({ allowedGitHosts: ['127.0.0.1'], signal: controller.signal });
    const building = buildProjectContext(url, opts).catch((error: unknown) => error);
    await expect.poll(() => silent.connections(), { timeout: 10_000 }).toBeGreaterThan(0);
    const cancelled = Date.now();
    controller.abort(new Error('run cancelled'));
    expect(await building).toMatchObject({ message: 'run cancelled' });
    await expect.poll(() => silent.closed(), { timeout: 3000 }).toBe(silent.connections());
    expect(Date.now() - cancelled).toBeLessThan(3000);
    expect(cached(opts)).toEqual([]);
  });
});

describe('a cached clone is fetched again once older than the refresh interval', () => {
  /** Commits `files` to the bare repository, as a push from someone's checkout would. */
  function push(bare: string, files: Record<string, string | Buffer>): void {
    const work = mkdir();
    const git = (...args: string[]) => execFileSync('git', args, { cwd: work, stdio: 'pipe' });
    git('clone', '-q', bare, '.');
    for (const [file, content] of Object.entries(files)) fs.writeFileSync(path.join(work, file), content);
    git('add', '.');
    git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-m', 'next');
    git('push', '-q', 'origin', 'HEAD');
  }
  /** Makes the cached clone look as if it had been fetched `seconds` ago. */
  const age = (opts: ProjectContextOptions, seconds: number) => {
    const [folder] = cached(opts);
    const then = new Date(Date.now() - seconds * 1000);
    fs.utimesSync(path.join(opts.cacheDir, folder!, '.git', 'svc-size'), then, then);
  };

  it('a run within the interval reads the clone it has; a later run reads the commit pushed meanwhile', async () => {
    const root = mkdir();
    const bare = repository(root, 'moving', { 'NOTES.md': 'first version\n' });
    const server = await startGitHttpServer(root);
    closers.push(server.close);
    const url = `${server.url}/moving.git`;
    const opts = options({ allowedGitHosts: ['127.0.0.1'], refreshMs: 60_000, maxCloneBytes: 2 * 1024 * 1024 });
    expect(await buildProjectContext(url, opts)).toContain('# moving');

    push(bare, { 'README.md': '# moving, second version\n' });
    expect(await buildProjectContext(url, opts)).not.toContain('second version');

    age(opts, 61);
    expect(await buildProjectContext(url, opts)).toContain('# moving, second version');
    expect(cached(opts)).toHaveLength(1);

    // Bounded as the first clone: a push past the size limit is not fetched, and the clone of before is read.
    push(bare, { 'README.md': '# moving, third version\n', 'big.bin': randomBytes(3 * 1024 * 1024) });
    age(opts, 61);
    const text = await buildProjectContext(url, opts);
    expect(text).toContain('# moving, second version');
    expect(text).not.toContain('big.bin');
    expect(cached(opts)).toHaveLength(1);

    // And a server that has gone away leaves the cached clone in use.
    await server.close();
    closers.splice(closers.indexOf(server.close), 1);
    age(opts, 61);
    expect(await buildProjectContext(url, opts)).toContain('# moving, second version');
  });
});
