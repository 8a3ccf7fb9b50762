import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { makeFifo, release, within } from '../context/fifo-fixture';
import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';
import { ok, projectFiles, refused, useFolders, write } from './project-fixture';
import { PROJECT_TOOLS } from './project-tools';

/** The project tools over files; their git tools are in project-tools.system.test.ts. */

const mkdir = useFolders();

/** The test project, with a .git folder that holds the commit subjects, as a repository's would. */
function project(): string {
  const dir = projectFiles(mkdir());
  write(dir, '.git/config', '[core]\n\tbare = false\n');
  write(dir, '.git/logs/HEAD', 'First commit\nChange the answer\n');
  return dir;
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

    const dir = project();
    expect(await refused(dir, 'read_file', { offset: 3 })).toMatch(/invalid input for project\.read_file[\s\S]*path/);
    expect(await refused(dir, 'list_files', { depth: 6 })).toMatch(/depth/);
    expect(await refused(dir, 'write_file', { path: 'a', content: 'x', mode: 'append' })).toMatch(/mode/);
  });

  it('answer an unknown tool with an error naming the tools there are', async () => {
    const text = await refused(project(), 'delete_everything', {});
    expect(text).toMatch(/^no tool named project\.delete_everything/);
    expect(text).toContain('read_file');
  });
});

describe('list_files', () => {
  it('lists entries under a folder, sorted, folders with a trailing slash, .git left out, to the depth asked', async () => {
    const dir = project();
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

  it('refuses binary files and folders', async () => {
    const dir = mkdir();
    write(dir, 'image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    write(dir, 'src/a.ts', 'a');
    expect(await refused(dir, 'read_file', { path: 'image.png' })).toMatch(/binary file/);
    expect(await refused(dir, 'read_file', { path: 'src' })).toMatch(/is a folder/);
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
    const dir = project();
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
    // The logs under .git hold the commits' subjects.
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

describe('paths stay inside the project', () => {
  /** A project with symlinks out of it and inside it, next to a folder it must never reveal. */
  function projectWithLinks() {
    const dir = project();
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

  it('write_file with if_exists "refuse" keeps an existing file, and takes the same content again as done', async () => {
    const { dir } = projectWithLinks();
    expect(await ok(dir, 'write_file', { path: 'reviews/a.md', content: 'first', if_exists: 'refuse' })).toBe(
      'created reviews/a.md (5 bytes)',
    );
    expect(await refused(dir, 'write_file', { path: 'reviews/a.md', content: 'other', if_exists: 'refuse' })).toBe(
      'reviews/a.md exists and is kept: if_exists "refuse" writes a new file only',
    );
    expect(await ok(dir, 'write_file', { path: 'reviews/a.md', content: 'first', if_exists: 'refuse' })).toBe(
      'reviews/a.md already holds this content (5 bytes)',
    );
    expect(await refused(dir, 'write_file', { path: 'inner.txt', content: 'x', if_exists: 'refuse' })).toMatch(
      /^inner.txt exists and is kept/,
    );
    expect(fs.readFileSync(path.join(dir, 'reviews/a.md'), 'utf8')).toBe('first');
    expect(fs.readFileSync(path.join(dir, 'src/app.ts'), 'utf8')).toContain('export const answer = 42;');
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
    const dir = project();
    expect(await refused(dir, 'write_file', { path: 'x.txt', content: 'x' }, { writable: false })).toBe(
      'the project is a clone of a git URL shared by other runs: nothing is written there',
    );
    expect(fs.existsSync(path.join(dir, 'x.txt'))).toBe(false);
  });
});

describe('nothing a tool opens waits: a FIFO is refused at once', () => {
  /** A project with FIFOs `pipe` and `more/pipe`, a symlink `link` to the first, and a text file beside them. */
  function projectWithFifos() {
    const dir = project();
    fs.mkdirSync(path.join(dir, 'more'));
    for (const fifo of ['pipe', 'more/pipe']) makeFifo(path.join(dir, fifo));
    fs.symlinkSync('pipe', path.join(dir, 'link'));
    const fifos = ['pipe', 'more/pipe'].map((fifo) => path.join(dir, fifo));
    return { dir, releaseAll: () => fifos.forEach(release) };
  }

  it('write_file, read_file and search_files answer that a FIFO is not a regular file, and write nothing', async () => {
    const { dir, releaseAll } = projectWithFifos();
    try {
      for (const file of ['pipe', 'link', 'more/pipe']) {
        expect(await within(2000, refused(dir, 'write_file', { path: file, content: 'stuck?' }))).toBe(
          `${file} is not a regular file: write_file writes regular files only`,
        );
        expect(await within(2000, refused(dir, 'read_file', { path: file }))).toBe(`${file} is not a regular file`);
        expect(await within(2000, refused(dir, 'search_files', { pattern: 'x', path: file }))).toBe(
          `${file} is not a regular file`,
        );
      }
      expect(await within(2000, ok(dir, 'search_files', { pattern: 'widgets' }))).toMatch(/^README\.md:1: # Widgets/);
      expect(fs.lstatSync(path.join(dir, 'pipe')).isFIFO()).toBe(true);
    } finally {
      releaseAll();
    }
  });

  it('many writes at FIFOs at once leave the file system free for everything else', async () => {
    const { dir, releaseAll } = projectWithFifos();
    try {
      // More than libuv's four threads: a write that waited for a reader would hold one each.
      const writes = Array.from({ length: 6 }, (_, i) =>
        refused(dir, 'write_file', { path: i % 2 ? 'pipe' : 'more/pipe', content: `write ${i}` }),
      );
      expect(await within(2000, Promise.all(writes))).toHaveLength(6);
      expect(await within(2000, fs.promises.readFile(path.join(dir, 'README.md'), 'utf8'))).toContain('# Widgets');
      expect(await within(2000, ok(dir, 'read_file', { path: 'src/app.ts' }))).toContain('answer = 42');
    } finally {
      releaseAll();
    }
  });
});
