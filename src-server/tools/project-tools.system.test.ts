import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';
import { call, commitAll, git, initRepository, ok, refused, useFolders, write } from './project-fixture';
import { callProjectTool } from './project-tools';

/** The project tools' git tools, on real repositories: the system suite, where git is installed. */

const mkdir = useFolders();
const repository = () => initRepository(mkdir());

describe('the git tools', () => {
  it('git_log: one line per commit (short hash, date, author, subject), newest first, limited, by path', async () => {
    const dir = repository();
    const [second, first] = git(dir, 'log', '--format=%h').trim().split('\n');
    expect(await ok(dir, 'git_log', {})).toBe(
      `${second} 2024-03-02 Ada: Change the answer\n${first} 2024-03-01 Ada: First commit\n`,
    );
    expect(await ok(dir, 'git_log', { max_count: 1 })).toBe(`${second} 2024-03-02 Ada: Change the answer\n`);
    expect(await ok(dir, 'git_log', { path: 'README.md' })).toBe(`${first} 2024-03-01 Ada: First commit\n`);
    expect(await ok(dir, 'git_log', { revision: 'HEAD~1' })).toBe(`${first} 2024-03-01 Ada: First commit\n`);
  });

  it('git_diff: the working tree against HEAD, a commit against its parent (a root commit too), or two revisions', async () => {
    const dir = repository();
    write(dir, 'README.md', '# Widgets\nThey make gadgets now.\n');
    const working = await ok(dir, 'git_diff', {});
    expect(working).toContain('diff --git a/README.md b/README.md');
    expect(working).toContain('+They make gadgets now.');

    const last = await ok(dir, 'git_diff', { revision: 'HEAD' });
    expect(last).toContain('-export const answer = 1;\n+export const answer = 42;');
    expect(last).toContain('+++ b/docs/guide.md');
    expect(last).not.toContain('README.md');

    const root = await ok(dir, 'git_diff', { revision: 'HEAD~1' });
    expect(root).toContain('+++ b/README.md');
    expect(root).toContain('+export const answer = 1;');

    const backwards = await ok(dir, 'git_diff', { revision: 'HEAD~1', against: 'HEAD', paths: ['src'] });
    expect(backwards).toContain('-export const answer = 42;\n+export const answer = 1;');
    expect(backwards).not.toContain('guide.md');
    expect(await ok(dir, 'git_diff', { paths: ['src'] })).toBe('no differences');
  });

  it('git_show: a commit with its message and patch, or a file as it was at a revision', async () => {
    const dir = repository();
    const commit = await ok(dir, 'git_show', { revision: 'HEAD' });
    expect(commit).toMatch(/^commit [0-9a-f]{40}\nAuthor: Ada <ada@example.com>/);
    expect(commit).toContain('    Change the answer');
    expect(commit).toContain('+export const answer = 42;');
    expect(await ok(dir, 'git_show', { revision: 'HEAD~1', path: 'src/app.ts' })).toBe('export const answer = 1;\n');
    expect(await refused(dir, 'git_show', { revision: 'HEAD~1', path: 'docs/guide.md' })).toMatch(
      /'docs\/guide\.md' exists on disk, but not in '[0-9a-f]{40}'/,
    );
    write(dir, 'logo.bin', Buffer.from([1, 0, 2]));
    commitAll(dir, 'Add a logo');
    expect(await refused(dir, 'git_show', { revision: 'HEAD', path: 'logo.bin' })).toMatch(/binary file/);
  });

  it('refuses a revision that is an option or not a commit, and writes nothing for it', async () => {
    const dir = repository();
    const out = path.join(mkdir(), 'out.patch');
    for (const args of [
      { revision: `--output=${out}` },
      { revision: 'HEAD', against: `--output=${out}` },
      { revision: '-p' },
      { revision: 'HEAD:README.md' },
      { revision: 'HEAD HEAD' },
    ]) {
      expect(await refused(dir, 'git_diff', args)).toMatch(/is refused: a revision is a branch/);
    }
    expect(await refused(dir, 'git_log', { revision: '--output=/dev/null' })).toMatch(/is refused/);
    expect(await refused(dir, 'git_log', { revision: 'a'.repeat(201) })).toMatch(/<=200 characters[\s\S]*revision/);
    expect(fs.existsSync(out)).toBe(false);
    expect(await refused(dir, 'git_show', { revision: 'no-such-branch' })).toBe(
      'no-such-branch is not a commit of this repository',
    );
    expect(await refused(dir, 'git_log', { revision: 'HEAD^{tree}' })).toMatch(/expected commit type/);
  });

  it('says when the project is not a git repository, even inside one (only the project folder is read)', async () => {
    const plain = mkdir();
    write(plain, 'a.txt', 'a');
    expect(await refused(plain, 'git_log', {})).toBe('the project folder is not a git repository');
    const dir = repository();
    expect(await refused(path.join(dir, 'src'), 'git_diff', { revision: 'HEAD' })).toBe(
      'the project folder is not a git repository',
    );
    expect(await ok(path.join(dir, 'src'), 'read_file', { path: 'app.ts' })).toContain('answer = 42');
  });

  it('refuse paths out of the folder', async () => {
    const dir = repository();
    const OUTSIDE = /is outside the project/;
    expect(await refused(dir, 'git_diff', { paths: ['../x'] })).toMatch(OUTSIDE);
    expect(await refused(dir, 'git_log', { path: '/etc' })).toMatch(OUTSIDE);
    expect(await refused(dir, 'git_show', { revision: 'HEAD', path: 'src/../../x' })).toMatch(OUTSIDE);
  });

  it('cuts a long diff at MAX_TOOL_RESULT_CHARS, saying how much git printed after', async () => {
    const dir = repository();
    write(dir, 'big.txt', Array.from({ length: 20_000 }, (_, i) => `old line ${i} of a long file`).join('\n'));
    commitAll(dir, 'Add a big file');
    write(dir, 'big.txt', Array.from({ length: 20_000 }, (_, i) => `new line ${i} of a long file`).join('\n'));
    const text = await ok(dir, 'git_diff', {});
    expect(text.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
    expect(text.startsWith('diff --git a/big.txt b/big.txt')).toBe(true);
    expect(text).toMatch(/\n\[cut: \d+ of \d+ characters not shown; \d+ bytes git printed after\]$/);
  });
});

describe("the project's git configuration runs nothing", () => {
  /** Programs that leave a marker file named after them in `markers` when they run (and pass their input on). */
  function spies() {
    const markers = mkdir();
    const bin = mkdir();
    const spy = (name: string) => {
      const script = path.join(bin, `${name}.sh`);
      fs.writeFileSync(script, `#!/bin/sh\ntouch '${markers}/${name}'\ncat\n`, { mode: 0o755 });
      return script;
    };
    return { markers, spy };
  }

  /**
   * A repository whose configuration, attributes and hooks name programs that leave a marker file when they run:
   * fsmonitor, an external diff, a diff driver's command and textconv, clean/smudge and process filters (one of them
   * the driver with the empty name, `[filter ""]`, which `filter=` picks), gpg for a signed commit
   * (log.showSignature), and hooks. Its working tree has changes for every one of them to act on.
   */
  function plantedRepository() {
    const dir = repository();
    const { markers, spy } = spies();
    write(dir, 'notes.txt', 'first notes\n');
    write(dir, 'page.md', 'first page\n');
    write(dir, 'settings.cfg', 'first settings\n');
    write(dir, '.gitattributes', '*.txt diff=spy filter=spy\n*.md filter=proc diff=spy\n*.cfg filter=\n');
    commitAll(dir, 'Add notes');
    // A signed commit: gpg would be asked to verify it.
    const tree = git(dir, 'rev-parse', 'HEAD^{tree}').trim();
    const parent = git(dir, 'rev-parse', 'HEAD').trim();
    const signed = execFileSync('git', ['hash-object', '-t', 'commit', '-w', '--stdin'], {
      cwd: dir,
      encoding: 'utf8',
      input:
        `tree ${tree}\nparent ${parent}\nauthor Ada <ada@example.com> 1709900000 +0000\n` +
        `committer Ada <ada@example.com> 1709900000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n` +
        ` -----END PGP SIGNATURE-----\n\nA signed commit\n`,
    }).trim();
    git(dir, 'update-ref', 'refs/heads/main', signed);
    for (const [key, value] of [
      ['core.fsmonitor', spy('fsmonitor')],
      ['diff.external', spy('external')],
      ['diff.spy.command', spy('command')],
      ['diff.spy.textconv', spy('textconv')],
      ['filter.spy.clean', spy('clean')],
      ['filter.spy.smudge', spy('smudge')],
      ['filter.spy.required', 'true'],
      ['filter.proc.process', spy('process')],
      ['log.showSignature', 'true'],
      ['gpg.program', spy('gpg')],
      ['core.pager', spy('pager')],
    ]) {
      git(dir, 'config', key!, value!);
    }
    // `git config` takes no key with an empty name: written as a person (or a script) would write it.
    fs.appendFileSync(
      path.join(dir, '.git/config'),
      `[filter ""]\n\tclean = ${spy('empty-clean')}\n\tsmudge = ${spy('empty-smudge')}\n\trequired = true\n`,
    );
    for (const hook of ['post-index-change', 'pre-commit', 'post-checkout', 'reference-transaction']) {
      fs.copyFileSync(spy(`hook-${hook}`), path.join(dir, '.git/hooks', hook));
      fs.chmodSync(path.join(dir, '.git/hooks', hook), 0o755);
    }
    write(dir, 'notes.txt', 'changed notes\n');
    write(dir, 'page.md', 'changed page\n');
    write(dir, 'settings.cfg', 'changed settings\n');
    return { dir, markers };
  }

  it('no git tool runs a program of the repository, and each still answers', async () => {
    const { dir, markers } = plantedRepository();
    const calls: [string, Record<string, unknown>, (text: string) => void][] = [
      ['git_diff', {}, (text) => expect(text).toContain('-first settings\n+changed settings')],
      ['git_diff', { paths: ['page.md'] }, (text) => expect(text).toContain('-first page\n+changed page')],
      ['git_diff', { paths: ['notes.txt'] }, (text) => expect(text).toContain('-first notes\n+changed notes')],
      ['git_diff', { against: 'HEAD~1' }, (text) => expect(text).toContain('+changed settings')],
      ['git_diff', { revision: 'HEAD~1' }, (text) => expect(text).toContain('+first settings')],
      [
        'git_diff',
        { revision: 'HEAD', against: 'HEAD~2', paths: ['.'] },
        (text) => expect(text).toContain('+first page'),
      ],
      ['git_log', {}, (text) => expect(text).toMatch(/^[0-9a-f]+ 2024-03-08 Ada: A signed commit\n/)],
      ['git_log', { path: 'settings.cfg' }, (text) => expect(text).toMatch(/^[0-9a-f]+ 2024-03-01 Ada: Add notes\n$/)],
      ['git_show', { revision: 'HEAD~1' }, (text) => expect(text).toContain('+first settings')],
      ['git_show', { revision: 'HEAD', path: 'settings.cfg' }, (text) => expect(text).toBe('first settings\n')],
      ['git_show', { revision: 'HEAD', path: 'notes.txt' }, (text) => expect(text).toBe('first notes\n')],
    ];
    for (const [tool, args, check] of calls) {
      check(await ok(dir, tool, args));
      expect(fs.readdirSync(markers), `${tool} ${JSON.stringify(args)}`).toEqual([]);
    }
    // The repository's own git, as a person would run it, does run them: what the tools turned off is live.
    git(dir, 'diff');
    expect(fs.readdirSync(markers)).toEqual(expect.arrayContaining(['empty-clean', 'fsmonitor', 'external']));
  });

  it('turns off drivers of any name, and leaves alone a repository with one it cannot name', async () => {
    const dir = repository();
    const { markers, spy } = spies();
    write(dir, '.gitattributes', '*.md filter=Odd.Name\n*.txt filter=a"b\\c\n*.cfg filter=x=y\n');
    write(dir, 'notes.txt', 'first notes\n');
    write(dir, 'settings.cfg', 'first settings\n');
    commitAll(dir, 'Add notes');
    fs.appendFileSync(
      path.join(dir, '.git/config'),
      `[filter "Odd.Name"]\n\tclean = ${spy('odd')}\n[filter "a\\"b\\\\c"]\n\tclean = ${spy('quoted')}\n`,
    );
    write(dir, 'README.md', '# Widgets, changed\n');
    write(dir, 'notes.txt', 'changed notes\n');
    write(dir, 'settings.cfg', 'changed settings\n');
    const diff = await ok(dir, 'git_diff', {});
    expect(diff).toContain('+# Widgets, changed');
    expect(diff).toContain('+changed notes');
    expect(fs.readdirSync(markers)).toEqual([]);

    fs.appendFileSync(path.join(dir, '.git/config'), `[filter "x=y"]\n\tclean = ${spy('equals')}\n`);
    for (const [tool, args] of [
      ['git_diff', {}],
      ['git_log', {}],
      ['git_show', { revision: 'HEAD' }],
    ] as const) {
      expect(await refused(dir, tool, args)).toBe(
        "the project's git configuration declares a filter driver that cannot be turned off: git is not run on it",
      );
    }
    expect(fs.readdirSync(markers)).toEqual([]);
    // Live: the repository's own git runs every one of them.
    git(dir, 'diff');
    expect(fs.readdirSync(markers).sort()).toEqual(['equals', 'odd', 'quoted']);
  });

  it('git reads the project folder as its work tree, whatever core.worktree says', async () => {
    const dir = repository();
    const elsewhere = mkdir();
    write(elsewhere, 'README.md', 'TOP SECRET\n');
    git(dir, 'config', 'core.worktree', elsewhere);
    const diff = await ok(dir, 'git_diff', {});
    expect(diff).toBe('no differences');
  });
});

describe("git reads the project's own repository, nothing out of the folder", () => {
  /** A repository out of the project whose commit no tool may show: its hash, and its objects folder. */
  function secretRepository() {
    const dir = mkdir();
    git(dir, 'init', '-q');
    write(dir, 'plans.txt', 'TOP SECRET plans\n');
    commitAll(dir, 'Secret plans of another team');
    return { dir, commit: git(dir, 'rev-parse', 'HEAD').trim(), objects: path.join(dir, '.git', 'objects') };
  }
  const SECRET = /secret plans/i;

  /** The answers of every git tool on the project, at its HEAD or at `revision`. */
  async function answers(dir: string, revision = 'HEAD') {
    const texts: string[] = [];
    for (const [tool, args] of [
      ['git_log', { revision }],
      ['git_show', { revision }],
      ['git_diff', { revision }],
      ['git_diff', {}],
    ] as const) {
      const result = await call(dir, tool, args);
      texts.push(result.text);
      expect(result.is_error, `${tool}: ${result.text}`).toBe(true);
    }
    for (const text of texts) expect(text).not.toMatch(SECRET);
    return texts;
  }

  it('refuses a .git that is a symlink or a file naming a repository elsewhere', async () => {
    const secret = secretRepository();
    const linked = mkdir();
    write(linked, 'README.md', 'linked\n');
    fs.symlinkSync(path.join(secret.dir, '.git'), path.join(linked, '.git'));
    for (const text of await answers(linked)) {
      expect(text).toBe("the project's .git is a symlink: git reads only a .git folder of the project itself");
    }
    const pointing = mkdir();
    write(pointing, 'README.md', 'pointing\n');
    write(pointing, '.git', `gitdir: ${path.join(secret.dir, '.git')}\n`);
    for (const text of await answers(pointing)) {
      expect(text).toBe(
        "the project's .git is a file naming a repository elsewhere (a linked worktree or a submodule): " +
          'git reads only a .git folder of the project itself',
      );
    }
  });

  it('never takes the project folder for a bare repository, whose alternates lead out', async () => {
    const secret = secretRepository();
    const dir = mkdir();
    write(dir, 'HEAD', 'ref: refs/heads/main\n');
    write(dir, 'refs/heads/main', `${secret.commit}\n`);
    write(dir, 'objects/info/alternates', `${secret.objects}\n`);
    write(dir, 'config', '[core]\n\tbare = true\n');
    for (const text of await answers(dir)) expect(text).toBe('the project folder is not a git repository');
  });

  it('refuses a repository whose alternates, commondir or objects lead out of the project', async () => {
    const secret = secretRepository();
    const borrowing = repository();
    write(borrowing, '.git/refs/heads/secret', `${secret.commit}\n`);
    write(borrowing, '.git/objects/info/alternates', `# borrowed\n${secret.objects}\n`);
    for (const text of await answers(borrowing, 'secret')) {
      expect(text).toBe(
        "the project's repository reaches out of the project folder (.git/objects/info/alternates): git is not run on it",
      );
    }
    // Relative to the objects folder, as git reads it.
    write(
      borrowing,
      '.git/objects/info/alternates',
      `${path.relative(path.join(borrowing, '.git/objects'), secret.objects)}\n`,
    );
    expect((await answers(borrowing, 'secret'))[0]).toMatch(
      /reaches out of the project folder \(\.git\/objects\/info\/alternates\)/,
    );

    const common = mkdir();
    write(common, 'README.md', 'a worktree of another repository\n');
    write(common, '.git/HEAD', `${secret.commit}\n`);
    write(common, '.git/commondir', `${path.join(secret.dir, '.git')}\n`);
    for (const text of await answers(common)) {
      expect(text).toBe(
        "the project's repository reaches out of the project folder (.git/commondir): git is not run on it",
      );
    }

    const linkedObjects = repository();
    write(linkedObjects, '.git/refs/heads/secret', `${secret.commit}\n`);
    fs.rmSync(path.join(linkedObjects, '.git/objects'), { recursive: true });
    fs.symlinkSync(secret.objects, path.join(linkedObjects, '.git/objects'));
    for (const text of await answers(linkedObjects, 'secret')) {
      expect(text).toBe(
        "the project's repository reaches out of the project folder (.git/objects): git is not run on it",
      );
    }
  });

  it('reads alternates and symlinks that stay inside the project', async () => {
    const dir = repository();
    const vendored = path.join(dir, 'vendor', 'lib');
    fs.mkdirSync(vendored, { recursive: true });
    git(vendored, 'init', '-q');
    write(vendored, 'lib.txt', 'vendored library\n');
    commitAll(vendored, 'Vendored library');
    const commit = git(vendored, 'rev-parse', 'HEAD').trim();
    write(dir, '.git/refs/heads/vendored', `${commit}\n`);
    write(dir, '.git/objects/info/alternates', '../../vendor/lib/.git/objects\n');
    expect(await ok(dir, 'git_log', { revision: 'vendored' })).toMatch(/ Ada: Vendored library\n$/);
    expect(await ok(dir, 'git_show', { revision: 'vendored', path: 'lib.txt' })).toBe('vendored library\n');
  });

  it("shows no commit of a submodule's repository out of the project", async () => {
    const secret = secretRepository();
    const dir = repository();
    git(dir, 'update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},sub`);
    git(dir, 'commit', '-q', '-m', 'Add a submodule');
    write(dir, 'sub/.git', `gitdir: ${path.join(secret.dir, '.git')}\n`);
    const diff = await ok(dir, 'git_diff', {});
    expect(diff).not.toContain(secret.commit);
    expect(diff).toBe('no differences');
  });
});

describe('a git call that does not end', () => {
  /** A repository with a branch whose ref is a FIFO: git waits on it until something writes, or it is stopped. */
  function stuckRepository() {
    const dir = repository();
    const fifo = path.join(dir, '.git/refs/heads/stuck');
    execFileSync('mkfifo', [fifo]);
    /** Whether git still has the FIFO open for reading (opening it for writing without a reader fails). */
    const gitStillReads = () => {
      try {
        fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
        return true;
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe('ENXIO');
        return false;
      }
    };
    return { dir, gitStillReads };
  }

  it('is stopped after timeoutMs with an error saying it took too long', async () => {
    const { dir, gitStillReads } = stuckRepository();
    const started = Date.now();
    expect(await refused(dir, 'git_log', { revision: 'stuck' }, { timeoutMs: 500 })).toBe(
      'git took longer than 0.5 s and was stopped',
    );
    expect(Date.now() - started).toBeLessThan(5000);
    expect(gitStillReads()).toBe(false);
  });

  it('is stopped when the signal aborts, and the call throws', async () => {
    const { dir, gitStillReads } = stuckRepository();
    const controller = new AbortController();
    const options = { root: dir, writable: true, timeoutMs: 60_000 };
    const pending = callProjectTool(options, 'git_diff', { revision: 'stuck' }, controller.signal);
    setTimeout(() => controller.abort(), 300);
    await expect(pending).rejects.toThrow(/abort/i);
    expect(gitStillReads()).toBe(false);
    await expect(callProjectTool(options, 'read_file', { path: 'README.md' }, controller.signal)).rejects.toThrow(
      /abort/i,
    );
  });
});
