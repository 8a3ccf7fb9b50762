import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

/** How long a holder may take to answer "who are you?" before it counts as hung (still "in use"). */
const ANSWER_TIMEOUT_MS = 2000;

/** What the holder of a data folder answers on its endpoint: never a token or a password. */
export interface LockHolder {
  pid: number;
  /** The server's address, or null while it is still starting. */
  url: string | null;
}

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder | null,
  ) {
    const who = holder ? `pid ${holder.pid}, ${holder.url ?? 'still starting'}` : 'a process that does not answer';
    super(
      `the data folder ${dataDir} is in use by another agent workflow service (${who}): ` +
        (holder?.url ? `open ${holder.url}, ` : '') +
        `or set DATA_DIR to another folder, or DATABASE_URL to use a PostgreSQL of your own`,
    );
  }
}

export interface InstanceLock {
  /** The endpoint the lock listens on (an abstract socket, a named pipe or a socket file). */
  readonly endpoint: string;
  /** What later starts are told: the server's address once it listens. */
  announce(url: string): void;
  release(): Promise<void>;
}

/**
 * One server per data folder. The holder listens on a local endpoint named after the folder's real path and
 * answers every connection with one JSON line, {pid, url}. The lock dies with its process: a Linux abstract
 * socket and a Windows named pipe vanish with their owner, so nothing stale is left after a kill -9; elsewhere
 * (macOS) it is a socket file in the folder, removed when a connect to it is refused.
 */
export async function lockDataDir(dataDir: string): Promise<InstanceLock> {
  const real = await fs.realpath(dataDir);
  const endpoint = endpointFor(real);
  const holder: LockHolder = { pid: process.pid, url: null };

  for (let attempt = 0; ; attempt++) {
    const answer = await ask(endpoint);
    if (answer.state === 'held') throw new DataDirInUseError(dataDir, answer.holder);
    if (answer.state === 'stale') await fs.rm(endpoint, { force: true });
    try {
      const server = await listen(endpoint, holder);
      return {
        endpoint,
        announce: (url) => void (holder.url = url),
        release: () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
          }),
      };
    } catch (error) {
      // Another start took it between our connect and our listen: ask it who it is (once).
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt > 0) throw error;
    }
  }
}

function endpointFor(realDir: string): string {
  const name = `agent-workflow-service-${createHash('sha256').update(realDir).digest('hex').slice(0, 24)}`;
  if (process.platform === 'linux') return `\0${name}`;
  if (process.platform === 'win32') return `\\\\?\\pipe\\${name}`;
  return path.join(realDir, 'instance.sock');
}

type Answer = { state: 'free' } | { state: 'stale' } | { state: 'held'; holder: LockHolder | null };

function ask(endpoint: string): Promise<Answer> {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect(endpoint);
    const done = (answer: Answer) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done({ state: 'held', holder: null }), ANSWER_TIMEOUT_MS);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      const newline = text.indexOf('\n');
      if (newline >= 0) done({ state: 'held', holder: parseHolder(text.slice(0, newline)) });
    });
    socket.on('end', () => done({ state: 'held', holder: parseHolder(text) }));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A socket file nobody listens on is left over from a process that is gone.
      if (error.code === 'ECONNREFUSED' && !endpoint.startsWith('\0') && process.platform !== 'win32') {
        done({ state: 'stale' });
      } else if (error.code === 'ECONNREFUSED' || error.code === 'ENOENT') {
        done({ state: 'free' });
      } else {
        done({ state: 'held', holder: null });
      }
    });
  });
}

function parseHolder(line: string): LockHolder | null {
  try {
    const value = JSON.parse(line) as Partial<LockHolder>;
    if (typeof value.pid !== 'number') return null;
    return { pid: value.pid, url: typeof value.url === 'string' ? value.url : null };
  } catch {
    return null;
  }
}

function listen(endpoint: string, holder: LockHolder): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end(`${JSON.stringify(holder)}\n`);
    });
    server.once('error', reject);
    server.listen(endpoint, () => {
      server.off('error', reject);
      // A later error on the listening endpoint changes nothing about who holds the folder.
      server.on('error', () => undefined);
      // The lock alone never keeps the process alive: it lives as long as the server does.
      server.unref();
      resolve(server);
    });
  });
}
