import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';
import { callProjectTool, PROJECT_TOOLS, type ProjectToolsOptions } from './project-tools';

const temp: string[] = [];
const mkdir = () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tools-')));
  temp.push(dir);
  return dir;
};
afterAll(() => temp.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** The test's own git: no configuration of the machine it runs on. */
function git(dir: string, ...args: string[]): string {
  return execFileSync(
    'git',
    [
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@t',
      '-c',
      'init.defaultBranch=main',
      '-c',
      'commit.gpgsign=false',
      ...args,
    ],
    { cwd: dir, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } },
  );
}

function write(dir: string, file: string, text: string | Buffer) {
  fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  fs.writeFileSync(path.join(dir, file), text);
}

function commitAll(dir: string, message: string, date = '2024-03-01T12:00:00Z') {
  git(dir, 'add', '-A');
  execFileSync('git', ['-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', 'commit', '-q', '-m', message], {
    cwd: dir,
    env: {
      ...process.env,
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
    },
  });
}

/** A repository of two commits: the first adds README.md and src/app.ts, the second changes app.ts and adds a guide. */
function repository(): string {
  const dir = mkdir();
  git(dir, 'init', '-q');
  write(dir, 'README.md', '# Widgets\nThey make widgets.\n');
  write(dir, 'src/app.ts', 'export const answer = 1;\n');
  commitAll(dir, 'First commit', '2024-03-01T12:00:00Z');
  write(dir, 'src/app.ts', 'export const answer = 42;\n');
  write(dir, 'docs/guide.md', 'How to use the widgets.\n');
  commitAll(dir, 'Change the answer', '2024-03-02T12:00:00Z');
  return dir;
}

const call = (root: string, tool: string, args: Record<string, unknown>, options: Partial<ProjectToolsOptions> = {}) =>
  callProjectTool({ root, writable: true, timeoutMs: 10_000, ...options }, tool, args, new AbortController().signal);

/** The text of a call that must succeed. */
async function ok(root: string, tool: string, args: Record<string, unknown>, options?: Partial<ProjectToolsOptions>) {
  const result = await call(root, tool, args, options);
  expect(result.is_error, result.text).toBe(false);
  return result.text;
}

/** The message of a call that must fail. */
async function refused(root: string, tool: string, args: Record<string, unknown>, opts?: Partial<ProjectToolsOptions>) {
  const result = await call(root, tool, args, opts);
  expect(result.is_error, result.text).toBe(true);
  return result.text;
}

describe('the project tools as the model sees them', () => {
  it('are named project.<tool>, with annotations that say which one writes', () => {
    expect(PROJECT_TOOLS.map((t) => t.name)).toEqual([
      'project.list_files',
      'project.read_file',
      'project.search_files',
      'project.git_diff',
      'project.git_log',
      'project.git_show',
      'project.write_file',
    ]);
    for (const tool of PROJECT_TOOLS) {
      expect(tool.server).toBe('project');
      expect(tool.name).toBe(`project.${tool.tool}`);
      expect(tool.description.length).toBeGreaterThan(20);
      const writes = tool.tool === 'write_file';
      expect(tool.annotations).toEqual({ read_only: !writes, idempotent: true, destructive: writes });
    }
  });

  it('describe their input with JSON Schemas that accept and refuse what the tools do', async () => {
    const ajv = new Ajv2020({ strict: true });
    const schema = (tool: string) => ajv.compile(PROJECT_TOOLS.find((t) => t.tool === tool)!.inputSchema);
    expect(schema('read_file')({ path: 'a', offset: 3, limit: 10 })).toBe(true);
    expect(schema('read_file')({ offset: 3 })).toBe(false);
    expect(schema('list_files')({})).toBe(true);
    expect(schema('list_files')({ depth: 6 })).toBe(false);
    expect(schema('git_diff')({ paths: ['a', 'b'], revision: 'HEAD' })).toBe(true);
    expect(schema('write_file')({ path: 'a', content: 'x', mode: 'append' })).toBe(false);

    const dir = repository();
    expect(await refused(dir, 'read_file', { offset: 3 })).toMatch(/invalid input for project\.read_file[\s\S]*path/);
    expect(await refused(dir, 'list_files', { depth: 6 })).toMatch(/depth/);
    expect(await refused(dir, 'write_file', { path: 'a', content: 'x', mode: 'append' })).toMatch(/mode/);
  });

  it('answer an unknown tool with an error naming the tools there are', async () => {
    const text = await refused(repository(), 'delete_everything', {});
    expect(text).toMatch(/^no tool named project\.delete_everything/);
    expect(text).toContain('read_file');
  });
});

describe('list_files', () => {
  it('lists entries under a folder, sorted, folders with a trailing slash, .git left out, to the depth asked', async () => {
    const dir = repository();
    write(dir, 'src/lib/deep/deeper.ts', '');
    expect((await ok(dir, 'list_files', {})).split('\n')).toEqual([
      'README.md',
      'docs/',
      'docs/guide.md',
      'src/',
      'src/app.ts',
      'src/lib/',
    ]);
    expect(await ok(dir, 'list_files', { path: 'src', depth: 1 })).toBe('src/app.ts\nsrc/lib/');
    expect(await ok(dir, 'list_files', { path: 'src/', depth: 5 })).toContain('src/lib/deep/deeper.ts');
    expect(await refused(dir, 'list_files', { path: 'README.md' })).toMatch(/is a file/);
    expect(await refused(dir, 'list_files', { path: 'nowhere' })).toMatch(/nowhere does not exist/);
  });

  it('stops at 1000 entries and says so', async () => {
    const dir = mkdir();
    for (let i = 0; i < 1005; i += 1) write(dir, `many/f${String(i).padStart(4, '0')}.txt`, '');
    const lines = (await ok(dir, 'list_files', { path: 'many' })).split('\n');
    expect(lines).toHaveLength(1001);
    expect(lines[999]).toBe('many/f0999.txt');
    expect(lines[1000]).toMatch(/cut at 1000 entries/);
  });
});

describe('read_file', () => {
  it('reads a range of lines, numbered, and says where to read on', async () => {
    const dir = mkdir();
    write(dir, 'notes.txt', Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\r\n') + '\r\n');
    expect(await ok(dir, 'read_file', { path: 'notes.txt' })).toBe(
      [
        'notes.txt: lines 1-10 of 10',
        ...Array.from({ length: 10 }, (_, i) => `${String(i + 1).padStart(2)}\tline ${i + 1}`),
      ].join('\n'),
    );
    expect(await ok(dir, 'read_file', { path: 'notes.txt', offset: 4, limit: 2 })).toBe(
      'notes.txt: lines 4-5 of 10\n4\tline 4\n5\tline 5\n… 5 more lines: read on with offset 6',
    );
    expect(await refused(dir, 'read_file', { path: 'notes.txt', offset: 11 })).toMatch(/offset 11 is past the end/);
  });

  it('refuses binary files, folders and what is not a regular file (a FIFO does not hold the call)', async () => {
    const dir = mkdir();
    write(dir, 'image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    execFileSync('mkfifo', [path.join(dir, 'pipe')]);
    write(dir, 'src/a.ts', 'a');
    expect(await refused(dir, 'read_file', { path: 'image.png' })).toMatch(/binary file/);
    expect(await refused(dir, 'read_file', { path: 'src' })).toMatch(/is a folder/);
    expect(await refused(dir, 'read_file', { path: 'pipe' })).toMatch(/not a regular file/);
  });

  it('reads only the first 256 KiB of a large file, and says so', async () => {
    const dir = mkdir();
    const line = 'x'.repeat(99);
    write(dir, 'big.log', `${line}\n`.repeat(5000)); // 500 000 bytes
    const text = await ok(dir, 'read_file', { path: 'big.log', offset: 2600, limit: 10 });
    expect(text.split('\n')[0]).toBe(
      'big.log: lines 2600-2609 of the first 2621 (the file has 500000 bytes; only its first 256 KiB are read)',
    );
    expect(await refused(dir, 'read_file', { path: 'big.log', offset: 2700 })).toMatch(/past the end/);
  });

  it('cuts its answer at MAX_TOOL_RESULT_CHARS with a line saying how much was cut', async () => {
    const dir = mkdir();
    write(dir, 'wide.txt', `${'y'.repeat(199)}\n`.repeat(1000));
    const text = await ok(dir, 'read_file', { path: 'wide.txt', limit: 1000 });
    expect(text.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
    expect(text).toMatch(/\n\[cut: \d+ of \d+ characters not shown\]$/);
  });
});

describe('search_files', () => {
  it('finds literal text case-insensitively as file:line: text, skipping .git, binary and large files', async () => {
    const dir = repository();
    write(dir, 'src/regex.ts', 'const re = /a.b(c/;\nconst other = "ANSWER(";\n');
    write(dir, 'data.bin', Buffer.concat([Buffer.from('answer\n'), Buffer.from([0])]));
    write(dir, 'huge.txt', `answer\n${'z'.repeat(1024 * 1024)}`);
    expect(await ok(dir, 'search_files', { pattern: 'Answer' })).toBe(
      [
        'src/app.ts:1: export const answer = 42;',
        'src/regex.ts:2: const other = "ANSWER(";',
        '(2 binary or larger than 1 MiB files were skipped)',
      ].join('\n'),
    );
    expect((await ok(dir, 'search_files', { pattern: 'a.b(' })).split('\n')[0]).toBe(
      'src/regex.ts:1: const re = /a.b(c/;',
    );
    // The commits' objects under .git hold "answer" too, compressed; their refs and logs hold the subjects.
    expect(await ok(dir, 'search_files', { pattern: 'change the answer' })).toMatch(/^no line contains/);
    expect(await ok(dir, 'search_files', { pattern: 'widgets', path: 'docs' })).toBe(
      'docs/guide.md:1: How to use the widgets.',
    );
    expect(await ok(dir, 'search_files', { pattern: 'widgets', path: 'README.md' })).toBe(
      'README.md:1: # Widgets\nREADME.md:2: They make widgets.',
    );
  });

  it('returns at most max_results lines and says there are more', async () => {
    const dir = mkdir();
    write(dir, 'todo.txt', 'TODO\n'.repeat(30));
    const lines = (await ok(dir, 'search_files', { pattern: 'todo', max_results: 5 })).split('\n');
    expect(lines.slice(0, 5)).toEqual([1, 2, 3, 4, 5].map((n) => `todo.txt:${n}: TODO`));
    expect(lines[5]).toMatch(/more matches past 5/);
  });
});

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

describe('paths stay inside the project', () => {
  /** A project with symlinks out of it and inside it, next to a folder it must never reveal. */
  function projectWithLinks() {
    const dir = repository();
    const outside = mkdir();
    write(outside, 'secret.txt', 'TOP SECRET\n');
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'leak.txt'));
    fs.symlinkSync(outside, path.join(dir, 'leakdir'));
    fs.symlinkSync(path.join(outside, 'not-yet.txt'), path.join(dir, 'dangling.txt'));
    fs.symlinkSync('src/app.ts', path.join(dir, 'inner.txt'));
    fs.symlinkSync('src', path.join(dir, 'innerdir'));
    return { dir, outside };
  }
  const OUTSIDE = /is outside the project/;

  it('read_file, list_files and search_files refuse absolute paths, .. out of the folder and symlinks out', async () => {
    const { dir } = projectWithLinks();
    for (const file of ['/etc/passwd', '../x', 'src/../../x', 'leak.txt', 'leakdir/secret.txt']) {
      expect(await refused(dir, 'read_file', { path: file })).toMatch(OUTSIDE);
    }
    expect(await refused(dir, 'list_files', { path: 'leakdir' })).toMatch(OUTSIDE);
    expect(await refused(dir, 'list_files', { path: '/' })).toMatch(OUTSIDE);
    expect(await refused(dir, 'search_files', { pattern: 'secret', path: 'leakdir' })).toMatch(OUTSIDE);
    expect(await refused(dir, 'search_files', { pattern: 'secret', path: '..' })).toMatch(OUTSIDE);
    // Listed, never followed.
    const listing = await ok(dir, 'list_files', { depth: 3 });
    expect(listing).toContain('leakdir');
    expect(listing).not.toContain('secret.txt');
    expect(await ok(dir, 'search_files', { pattern: 'top secret' })).toMatch(/^no line contains/);
  });

  it('follows a symlink that stays inside', async () => {
    const { dir } = projectWithLinks();
    expect(await ok(dir, 'read_file', { path: 'inner.txt' })).toContain('export const answer = 42;');
    expect(await ok(dir, 'read_file', { path: 'innerdir/app.ts' })).toContain('export const answer = 42;');
    expect(await ok(dir, 'read_file', { path: 'src/../README.md' })).toContain('# Widgets');
    expect(await ok(dir, 'list_files', { path: 'innerdir' })).toBe('innerdir/app.ts');
  });

  it('the git tools refuse paths out of the folder', async () => {
    const { dir } = projectWithLinks();
    expect(await refused(dir, 'git_diff', { paths: ['../x'] })).toMatch(OUTSIDE);
    expect(await refused(dir, 'git_log', { path: '/etc' })).toMatch(OUTSIDE);
    expect(await refused(dir, 'git_show', { revision: 'HEAD', path: 'src/../../x' })).toMatch(OUTSIDE);
  });

  it('write_file writes inside, through symlinks that stay inside, creating folders', async () => {
    const { dir } = projectWithLinks();
    expect(await ok(dir, 'write_file', { path: 'new/deep/file.ts', content: 'one' })).toBe(
      'created new/deep/file.ts (3 bytes)',
    );
    expect(fs.readFileSync(path.join(dir, 'new/deep/file.ts'), 'utf8')).toBe('one');
    expect(await ok(dir, 'write_file', { path: 'new/deep/file.ts', content: 'twö' })).toBe(
      'replaced new/deep/file.ts (4 bytes)',
    );
    await ok(dir, 'write_file', { path: 'innerdir/made.ts', content: 'made' });
    expect(fs.readFileSync(path.join(dir, 'src/made.ts'), 'utf8')).toBe('made');
    await ok(dir, 'write_file', { path: 'inner.txt', content: 'through the link' });
    expect(fs.readFileSync(path.join(dir, 'src/app.ts'), 'utf8')).toBe('through the link');
    expect(fs.lstatSync(path.join(dir, 'inner.txt')).isSymbolicLink()).toBe(true);
  });

  it('write_file refuses paths out of the folder, symlinks out (dangling ones too) and writes nothing there', async () => {
    const { dir, outside } = projectWithLinks();
    for (const file of ['/tmp/svc-tools-escape.txt', '../escape.txt', 'leak.txt', 'leakdir/new.txt', 'dangling.txt']) {
      expect(await refused(dir, 'write_file', { path: file, content: 'pwned' })).toMatch(OUTSIDE);
    }
    expect(await refused(dir, 'write_file', { path: 'leakdir/sub/new.txt', content: 'pwned' })).toMatch(OUTSIDE);
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET\n');
    expect(fs.existsSync('/tmp/svc-tools-escape.txt')).toBe(false);
    expect(fs.existsSync(path.join(path.dirname(dir), 'escape.txt'))).toBe(false);
  });

  it('write_file never writes into .git, however the path reaches it', async () => {
    const { dir } = projectWithLinks();
    fs.symlinkSync('.git', path.join(dir, 'gitlink'));
    const config = fs.readFileSync(path.join(dir, '.git/config'), 'utf8');
    for (const file of [
      '.git/config',
      '.GIT/hooks/pre-commit',
      'sub/.git/config',
      'gitlink/config',
      'gitlink/hooks/x',
    ]) {
      expect(await refused(dir, 'write_file', { path: file, content: '[core]\n\tfsmonitor = /bin/sh\n' })).toMatch(
        /inside a \.git folder/,
      );
    }
    expect(fs.readFileSync(path.join(dir, '.git/config'), 'utf8')).toBe(config);
    expect(fs.existsSync(path.join(dir, '.git/hooks/x'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'sub'))).toBe(false);
  });

  it('write_file is refused on a shared clone of a git URL', async () => {
    const dir = repository();
    expect(await refused(dir, 'write_file', { path: 'x.txt', content: 'x' }, { writable: false })).toBe(
      'the project is a clone of a git URL shared by other runs: nothing is written there',
    );
    expect(fs.existsSync(path.join(dir, 'x.txt'))).toBe(false);
  });
});

describe("the project's git configuration runs nothing", () => {
  /**
   * A repository whose configuration, attributes and hooks name programs that leave a marker file when they run:
   * fsmonitor, an external diff, a diff driver's command and textconv, clean/smudge and process filters, gpg for a
   * signed commit (log.showSignature), and hooks. Its working tree has changes for every one of them to act on.
   */
  function plantedRepository() {
    const dir = repository();
    const markers = mkdir();
    const bin = mkdir();
    const spy = (name: string) => {
      const script = path.join(bin, `${name}.sh`);
      fs.writeFileSync(script, `#!/bin/sh\ntouch '${markers}/${name}'\ncat\n`, { mode: 0o755 });
      return script;
    };
    write(dir, 'notes.txt', 'first notes\n');
    write(dir, 'page.md', 'first page\n');
    write(dir, '.gitattributes', '*.txt diff=spy filter=spy\n*.md filter=proc diff=spy\n');
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
    for (const hook of ['post-index-change', 'pre-commit', 'post-checkout', 'reference-transaction']) {
      fs.copyFileSync(spy(`hook-${hook}`), path.join(dir, '.git/hooks', hook));
      fs.chmodSync(path.join(dir, '.git/hooks', hook), 0o755);
    }
    write(dir, 'notes.txt', 'changed notes\n');
    write(dir, 'page.md', 'changed page\n');
    return { dir, markers };
  }

  it('git_diff, git_log and git_show still answer, and no program of the repository ran', async () => {
    const { dir, markers } = plantedRepository();
    const working = await ok(dir, 'git_diff', {});
    expect(working).toContain('-first notes\n+changed notes');
    expect(working).toContain('-first page\n+changed page');
    expect(await ok(dir, 'git_diff', { revision: 'HEAD~1' })).toContain('+first notes');
    expect(await ok(dir, 'git_diff', { revision: 'HEAD', against: 'HEAD~2' })).toContain('+first page');
    expect(await ok(dir, 'git_log', {})).toMatch(/^[0-9a-f]+ 2024-03-08 Ada: A signed commit\n/);
    const shown = await ok(dir, 'git_show', { revision: 'HEAD~1' });
    expect(shown).toContain('Add notes');
    expect(shown).toContain('+first notes');
    expect(await ok(dir, 'git_show', { revision: 'HEAD', path: 'notes.txt' })).toBe('first notes\n');
    expect(fs.readdirSync(markers)).toEqual([]);
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
