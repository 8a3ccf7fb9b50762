import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';
import { ProjectPathError } from './errors';
import type { GitUrl } from './git-url';

const log = getLogger('svc.context');

export interface CloneLimits {
  /** Where clones are kept between runs (DATA_DIR/repositories). */
  cacheDir: string;
  timeoutMs: number;
  /** One clone, its .git included; the clone is stopped as soon as it passes this (or the whole cache's limit). */
  maxCloneBytes: number;
  /** All clones together, after every clone; the least recently used go first. */
  maxCacheBytes: number;
  /** Stops the clone: the run was cancelled. */
  signal?: AbortSignal;
  /**
   * A cached clone fetched longer ago than this is fetched again when a run asks for it (GIT_REFRESH_S); 0 fetches
   * at every use. Undefined keeps a clone until it is evicted.
   */
  refreshMs?: number;
}

/** Where a network clone must connect: the addresses its host was checked at (http and https only). */
export interface Pin {
  url: GitUrl;
  addresses: string[];
}

/** The size of a finished clone, kept inside it so that eviction need not walk every clone. */
const SIZE_FILE = path.join('.git', 'svc-size');
/** The size file's width: the size it holds counts the file itself, so that the cache's sum is exact. */
const SIZE_DIGITS = 16;
/** Staging folders older than this belong to a process that died mid-clone. */
const STALE_STAGING_MS = 3600_000;
const WATCH_MS = 200;

/** Clones a run of this process is reading: eviction leaves them alone. */
const inUse = new Map<string, number>();

/**
 * Clones enter each cache one at a time in this process, so that each makes room in the cache as the one before left
 * it: two clones finishing together would otherwise both count on the same free room.
 */
const admissions = new Map<string, Promise<unknown>>();
function oneAtATime<T>(cacheDir: string, admit: () => Promise<T>): Promise<T> {
  const admitted = (admissions.get(cacheDir) ?? Promise.resolve()).then(admit);
  admissions.set(
    cacheDir,
    admitted.catch(() => undefined),
  );
  return admitted;
}

const mib = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(1));

/** Holds a cached clone (or any folder) for the duration of `use`. */
export async function holding<T>(folder: string, use: () => Promise<T>): Promise<T> {
  inUse.set(folder, (inUse.get(folder) ?? 0) + 1);
  try {
    return await use();
  } finally {
    const left = (inUse.get(folder) ?? 1) - 1;
    if (left > 0) inUse.set(folder, left);
    else inUse.delete(folder);
  }
}

export function cacheFolder(cacheDir: string, source: string): string {
  return path.join(cacheDir, createHash('sha256').update(source).digest('hex').slice(0, 16));
}

/**
 * A shallow clone of `source` in the cache, made once and reused. `shown` names it in messages (no credentials);
 * `pin` makes git connect to the addresses that were checked, whatever DNS says next. Nothing git writes on stderr
 * reaches the caller: it tells an open port from a closed one, or one service from another, on hosts the server
 * can reach. It is logged for the operator instead.
 */
export async function cloneIntoCache(source: string, shown: string, pin: Pin | undefined, limits: CloneLimits) {
  limits.signal?.throwIfAborted();
  const target = cacheFolder(limits.cacheDir, source);
  if (await exists(path.join(target, '.git'))) {
    const now = new Date();
    await fs.utimes(target, now, now).catch(() => undefined);
    if (!(await stale(target, limits))) return target;
    return refresh(target, source, shown, pin, limits);
  }
  await fs.mkdir(limits.cacheDir, { recursive: true, mode: 0o700 });
  const staging = await cloneToStaging(target, source, shown, pin, limits);
  await admit(staging, target, limits, shown, { replace: false });
  return target;
}

/** Whether a cached clone was fetched longer ago than the refresh interval (its size file is written at fetch). */
async function stale(target: string, limits: CloneLimits): Promise<boolean> {
  if (limits.refreshMs === undefined) return false;
  const fetched = await fs.stat(path.join(target, SIZE_FILE)).catch(() => undefined);
  return !fetched || Date.now() - fetched.mtimeMs >= limits.refreshMs;
}

/**
 * Fetches a stale clone again, with the same bounds as the first clone (size, time, pinned addresses, cancel),
 * into a staging folder that then takes the old one's place. A clone that a run of this process is reading is
 * left as it is, and so is the cached clone when the new fetch fails or does not fit in the cache: the run reads
 * what was fetched before (the failure is logged), unless it was cancelled.
 */
async function refresh(target: string, source: string, shown: string, pin: Pin | undefined, limits: CloneLimits) {
  if (inUse.has(target)) return target;
  let staging: string;
  try {
    staging = await cloneToStaging(target, source, shown, pin, limits);
  } catch (error) {
    if (limits.signal?.aborted) throw error;
    log.warn(`fetching ${shown} again failed, its clone of before is used: ${errorMessage(error)}`);
    return target;
  }
  try {
    if (await admit(staging, target, limits, shown, { replace: true })) {
      log.info(`fetched ${shown} again (its clone was older than ${Math.round(limits.refreshMs! / 1000)} s)`);
    }
  } catch (error) {
    log.warn(`fetching ${shown} again failed, its clone of before is used: ${errorMessage(error)}`);
  }
  return target;
}

/**
 * Moves a finished clone from `staging` to its place in the cache, once room is made for it (see makeRoom), one
 * admission at a time. A clone already in its place stays: another run's that was cloned meanwhile, or, when
 * `replace` (a refresh), one that a run of this process is reading. Whatever does not enter is removed, inside the
 * admission: once it resolves, no more disk work stands between the clone and the run that holds it.
 */
async function admit(
  staging: string,
  target: string,
  limits: CloneLimits,
  shown: string,
  { replace }: { replace: boolean },
): Promise<boolean> {
  const drop = () => fs.rm(staging, { recursive: true, force: true });
  return oneAtATime(limits.cacheDir, async () => {
    try {
      if ((await exists(target)) && (!replace || inUse.has(target))) {
        await drop();
        return false;
      }
      await makeRoom(limits, await recordedSize(staging), target, shown);
      const old = `${target}.tmp-old-${process.pid}-${Date.now()}`;
      await fs.rename(target, old).catch(() => undefined);
      // Another process may have put its clone there meanwhile: then its clone is the one kept.
      await fs.rename(staging, target).catch(drop);
      await fs.rm(old, { recursive: true, force: true });
      return true;
    } catch (error) {
      await drop();
      throw error;
    }
  });
}

/** A bounded shallow clone of `source` in a staging folder next to `target`; removed again when it fails. */
async function cloneToStaging(
  target: string,
  source: string,
  shown: string,
  pin: Pin | undefined,
  limits: CloneLimits,
) {
  const staging = `${target}.tmp-${process.pid}-${Date.now()}`;
  // A clone larger than the whole cache could only be kept by passing the cache's limit.
  const maxBytes = Math.min(limits.maxCloneBytes, limits.maxCacheBytes);
  const tooLarge = () =>
    new ProjectPathError(
      `${shown} is larger than the ${mib(maxBytes)} MiB limit for project context` +
        (maxBytes < limits.maxCloneBytes ? ' (the whole clone cache, GIT_CACHE_MAX_MB)' : ''),
    );
  try {
    // The objects first, without a work tree, watched as they arrive; then the work tree, whose size the tree
    // itself tells beforehand (a small pack can hold a huge file of zeros). No template: the server's
    // init.templateDir could bring hooks and filter drivers into the clone.
    await git(
      [...networkConfig(pin), 'clone', '--template=', '--depth', '1', '--single-branch', '--no-tags', '--no-checkout'],
      {
        what: 'clone',
        args: ['--', pin?.url.href ?? source, staging],
        limits,
        shown,
        watch: { folder: staging, maxBytes, tooLarge },
      },
    );
    const objects = await folderSize(staging);
    const files = await treeSize(staging, limits, shown);
    if (objects + files > maxBytes) throw tooLarge();
    await git(['-C', staging, 'checkout', '-q'], { what: 'checkout', args: [], limits, shown, cloneOnly: true });
    // Measured, not estimated: the checkout wrote git's index besides the files.
    const size = (await folderSize(staging)) + SIZE_DIGITS;
    if (size > maxBytes) throw tooLarge();
    await fs.writeFile(path.join(staging, SIZE_FILE), String(size).padStart(SIZE_DIGITS, '0'));
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    throw error;
  }
  return staging;
}

/**
 * No redirects (one to an internal address would bypass the check), and for http(s) the checked addresses pinned
 * through curl's resolve list. ssh and git:// connect by name, just after the check.
 */
function networkConfig(pin: Pin | undefined): string[] {
  const config = ['-c', 'http.followRedirects=false'];
  if (pin && (pin.url.scheme === 'http' || pin.url.scheme === 'https')) {
    const addresses = pin.addresses.map((a) => (isIP(a) === 6 ? `[${a}]` : a)).join(',');
    config.push('-c', `http.curloptResolve=${pin.url.host}:${pin.url.port}:${addresses}`);
  }
  return config;
}

interface GitCall {
  /** What the call does, for the log line when it fails. */
  what: string;
  args: string[];
  limits: CloneLimits;
  shown: string;
  /** Stops git once the folder passes `maxBytes`. */
  watch?: { folder: string; maxBytes: number; tooLarge: () => Error };
  /** Collect stdout (at most this many bytes). */
  stdoutLimit?: number;
  /**
   * A step in the finished clone, which needs no network and so no credentials: it reads no system or user
   * configuration. Checking out then runs no filter driver that the repository's .gitattributes could pick
   * (`filter=<name>`) among the server's own: the clone's configuration, written by git clone without a template,
   * declares none.
   */
  cloneOnly?: boolean;
}

/**
 * Runs git in a process group of its own, so that a timeout, a cancel or the size limit stops its helpers too
 * (git-remote-https does the network reading). No hook runs, the server's own included (`core.hooksPath` of its
 * configuration): a clone's ref updates and checkout are the repository's doing.
 */
function git(options: string[], call: GitCall): Promise<string> {
  const { limits, shown } = call;
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-c', 'core.hooksPath=/dev/null', ...options, ...call.args], {
      detached: true,
      stdio: ['ignore', call.stdoutLimit ? 'pipe' : 'ignore', 'pipe'],
      env: {
        ...process.env,
        GIT_TERMINAL_PROMPT: '0',
        GIT_ASKPASS: 'echo',
        // Only these transports: no ext::, no fd::, whatever a URL or a submodule asks.
        GIT_ALLOW_PROTOCOL: 'https:http:ssh:git:file',
        ...(call.cloneOnly && { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' }),
      },
    });
    let stderr = '';
    let stdout = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 16_384) stderr += chunk;
    });
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.length > call.stdoutLimit!)
        stop(new ProjectPathError(`${shown} has too many files for project context`));
    });
    let stopped: unknown;
    const stop = (reason: unknown) => {
      if (stopped !== undefined || child.exitCode !== null || child.signalCode !== null) return;
      stopped = reason;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const onAbort = () => stop(limits.signal!.reason);
    limits.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => stop(new ProjectPathError(`could not clone ${shown}: it took longer than ${limits.timeoutMs / 1000} s`)),
      limits.timeoutMs,
    );
    let measuring = false;
    const watcher =
      call.watch &&
      setInterval(() => {
        if (measuring) return;
        measuring = true;
        void folderSize(call.watch!.folder)
          .then((size) => size > call.watch!.maxBytes && stop(call.watch!.tooLarge()))
          .finally(() => (measuring = false));
      }, WATCH_MS);
    child.on('error', (error) => stop(new ProjectPathError(`could not run git: ${error.message}`)));
    child.on('close', (code) => {
      clearTimeout(timer);
      if (watcher) clearInterval(watcher);
      limits.signal?.removeEventListener('abort', onAbort);
      if (stopped !== undefined) reject(stopped);
      else if (code === 0) resolve(stdout);
      else {
        log.warn(`git ${call.what} of ${shown} failed: ${stderr.trim()}`);
        reject(new ProjectPathError(`could not clone ${shown}`));
      }
    });
  });
}

/** What the work tree of the clone's HEAD will hold, from the tree's own blob sizes. */
async function treeSize(folder: string, limits: CloneLimits, shown: string): Promise<number> {
  const listing = await git(['-C', folder, 'ls-tree', '-r', '-l', '-z', 'HEAD'], {
    what: 'ls-tree',
    args: [],
    limits,
    shown,
    cloneOnly: true,
    stdoutLimit: 64 * 1024 * 1024,
  });
  let total = 0;
  for (const entry of listing.split('\0')) {
    const size = Number(entry.split('\t')[0]?.trim().split(/\s+/)[3]);
    if (Number.isFinite(size)) total += size;
  }
  return total;
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

/** Bytes of the files under `dir`; files that vanish while it counts (git renames as it goes) count as nothing. */
export async function folderSize(dir: string): Promise<number> {
  let total = 0;
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    total += (await fs.stat(path.join(entry.parentPath, entry.name)).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

/** A finished clone's size, as its size file says, or counted when it has none. */
async function recordedSize(folder: string): Promise<number> {
  const recorded = Number(await fs.readFile(path.join(folder, SIZE_FILE), 'utf8').catch(() => NaN));
  return Number.isFinite(recorded) ? recorded : folderSize(folder);
}

/**
 * Makes room for a clone of `incoming` bytes before it enters the cache, so that the cache stays within its limit
 * after every clone: the least recently used clones go first (a clone's folder time is touched at each use), never
 * one a run of this process is reading. `target` is where the clone goes; an older clone there is about to be
 * replaced and does not count. When the clones being read leave no room, nothing is evicted and the clone is
 * refused. Staging folders of a process that died mid-clone go too.
 */
async function makeRoom(limits: CloneLimits, incoming: number, target: string, shown: string): Promise<void> {
  const clones: { folder: string; used: number; size: number }[] = [];
  for (const entry of await fs.readdir(limits.cacheDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const folder = path.join(limits.cacheDir, entry.name);
    const stat = await fs.stat(folder).catch(() => undefined);
    if (!stat) continue;
    if (entry.name.includes('.tmp-')) {
      if (Date.now() - stat.mtimeMs > STALE_STAGING_MS) await fs.rm(folder, { recursive: true, force: true });
      continue;
    }
    if (folder !== target) clones.push({ folder, used: stat.mtimeMs, size: await recordedSize(folder) });
  }
  const held = clones.filter((clone) => inUse.has(clone.folder)).reduce((sum, clone) => sum + clone.size, 0);
  if (held + incoming > limits.maxCacheBytes) {
    throw new ProjectPathError(
      `${shown} does not fit in the ${mib(limits.maxCacheBytes)} MiB clone cache (GIT_CACHE_MAX_MB) beside the ` +
        'clones that runs are reading now: try again when they have finished',
    );
  }
  let total = clones.reduce((sum, clone) => sum + clone.size, 0) + incoming;
  for (const clone of clones.sort((a, b) => a.used - b.used)) {
    if (total <= limits.maxCacheBytes) break;
    if (inUse.has(clone.folder)) continue;
    await fs.rm(clone.folder, { recursive: true, force: true });
    total -= clone.size;
    log.info(
      `evicted the clone in ${path.basename(clone.folder)} from the cache (${clone.size} bytes, least recently used)`,
    );
  }
}
