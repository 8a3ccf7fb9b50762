import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { create as createTar } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { ArchiveError, archiveWriter, extractArchive, folderWriter } from './backup-archive';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await fs.rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'backup-archive-'));
  dirs.push(dir);
  return dir;
}

/** Every file under `dir`, by its relative name, with its content. */
async function contents(dir: string, prefix = ''): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const name = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(found, await contents(path.join(dir, entry.name), name));
    else found[name] = (await fs.readFile(path.join(dir, entry.name))).toString('base64');
  }
  return found;
}

describe('backup archives', () => {
  it('hold folders and files as they were: empty, block-sized, large, and names longer than ustar holds', async () => {
    const dir = await tempDir();
    const source = path.join(dir, 'source');
    await fs.mkdir(source);
    const files: Record<string, Buffer> = {
      empty: Buffer.alloc(0),
      block: randomBytes(512),
      large: randomBytes(3 * 1024 * 1024 + 17),
    };
    for (const [name, data] of Object.entries(files)) await fs.writeFile(path.join(source, name), data);
    const long = `${'a'.repeat(120)}/${'b'.repeat(120)}/${'c'.repeat(110)}`;

    const archive = path.join(dir, 'backup.tar.gz');
    const writer = await archiveWriter(archive);
    await writer.directory('postgres');
    await writer.directory('postgres/empty-folder');
    for (const name of Object.keys(files))
      expect(await writer.file(`postgres/${name}`, path.join(source, name))).toBe(true);
    expect(await writer.file('postgres/gone', path.join(source, 'not-there'))).toBe(false);
    await writer.data(long, 'a long name');
    await writer.data('manifest.json', '{}\n');
    await writer.close();
    expect((await fs.stat(archive)).mode & 0o777).toBe(0o600);

    const into = path.join(dir, 'restored');
    await extractArchive(archive, into);
    expect(await contents(into)).toEqual({
      ...Object.fromEntries(Object.entries(files).map(([name, data]) => [`postgres/${name}`, data.toString('base64')])),
      [long]: Buffer.from('a long name').toString('base64'),
      'manifest.json': Buffer.from('{}\n').toString('base64'),
    });
    expect((await fs.stat(path.join(into, 'postgres', 'empty-folder'))).isDirectory()).toBe(true);
    expect((await fs.stat(path.join(into, 'postgres', 'large'))).mode & 0o777).toBe(0o600);
    expect((await fs.stat(path.join(into, 'postgres'))).mode & 0o777).toBe(0o700);
  });

  it('refuse a name outside the backup, a cut-off archive, and a file that is not one', async () => {
    const dir = await tempDir();
    // An archive naming ../outside, as node-tar writes one when told to keep such names.
    await fs.mkdir(path.join(dir, 'a'));
    await fs.writeFile(path.join(dir, 'outside'), 'no');
    const escaping = path.join(dir, 'escaping.tar.gz');
    await createTar({ file: escaping, cwd: path.join(dir, 'a'), gzip: true, preservePaths: true }, ['../outside']);
    await fs.rm(path.join(dir, 'outside'));
    await expect(extractArchive(escaping, path.join(dir, 'a'))).rejects.toThrow(/a path outside the backup/);
    await expect(fs.access(path.join(dir, 'outside'))).rejects.toThrow();

    const absolute = path.join(dir, 'absolute.tar.gz');
    await createTar({ file: absolute, cwd: dir, gzip: true, preservePaths: true }, [escaping]);
    await expect(extractArchive(absolute, path.join(dir, 'd'))).rejects.toThrow(/a path outside the backup/);

    await fs.symlink('escaping.tar.gz', path.join(dir, 'link'));
    const linked = path.join(dir, 'link.tar.gz');
    await createTar({ file: linked, cwd: dir, gzip: true }, ['link']);
    await expect(extractArchive(linked, path.join(dir, 'e'))).rejects.toThrow(/an entry of a kind a backup never has/);
    await expect(fs.lstat(path.join(dir, 'e', 'link'))).rejects.toThrow(/ENOENT/);

    const whole = path.join(dir, 'whole.tar.gz');
    const complete = await archiveWriter(whole);
    await complete.data('big', randomBytes(200_000));
    await complete.close();
    const bytes = await fs.readFile(whole);
    const cut = path.join(dir, 'cut.tar.gz');
    await fs.writeFile(cut, bytes.subarray(0, bytes.length / 2));
    await expect(extractArchive(cut, path.join(dir, 'b'))).rejects.toThrow(ArchiveError);

    const text = path.join(dir, 'notes.tar.gz');
    await fs.writeFile(text, 'not an archive');
    await expect(extractArchive(text, path.join(dir, 'c'))).rejects.toThrow(/not a backup archive/);
  });

  it('as a folder, are private to the user and never replace a file', async () => {
    const dir = await tempDir();
    const writer = await folderWriter(path.join(dir, 'backup'));
    await writer.directory('postgres/base');
    await writer.data('postgres/base/file', 'data');
    await expect(writer.data('postgres/base/file', 'again')).rejects.toThrow(/EEXIST/);
    await writer.close();
    expect((await fs.stat(path.join(dir, 'backup'))).mode & 0o777).toBe(0o700);
    expect((await fs.stat(path.join(dir, 'backup', 'postgres', 'base', 'file'))).mode & 0o777).toBe(0o600);
  });
});
