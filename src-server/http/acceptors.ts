import { spawn } from 'node:child_process';
import net from 'node:net';
import { getLogger } from '../log';

const log = getLogger('svc.http');

/**
 * Listening handles on the server's socket in all, its own included: connections accepted per event loop turn. With
 * hundreds of streams a turn takes 100–300 ms, so 16 let a burst of 500 connections in over 5 s; 128 let it in within
 * a few turns. A handle costs a descriptor, and a failed accept4 (EAGAIN) when fewer connections than handles wait.
 */
export const ACCEPTORS = 128;

/** How long the copies may take to arrive before the server goes on with its own handle alone. */
const COPY_TIMEOUT_MS = 5_000;

/**
 * Echoes each handle it is sent back to its parent, then exits when told. Run with `node -e`: the handle travels over
 * the IPC channel as a descriptor (SCM_RIGHTS), so each one that comes back is a new descriptor of the same socket.
 * It never listens itself, so it accepts nothing.
 */
const ECHO = `process.on('message', (m, h) => (m === 'copy' ? process.send('copy', h) : process.exit(0)));`;

export interface Acceptors {
  /** How many handles accept on the socket now, the server's own included. */
  readonly count: number;
  /**
   * Stops the copies accepting; resolves once the connections they accepted have ended, as `server.close()` does for
   * its own (which closes the server's own handle). The HTTP server tracks every connection, so its
   * `closeAllConnections()` ends these too.
   */
  close(): Promise<void>;
}

/**
 * Since libuv 1.45 (Node 20) a listening handle accepts one connection per turn of the event loop. Under load a turn
 * takes 10–50 ms (hundreds of streams' reads and writes), so a burst of new connections waited in the kernel's queue
 * for seconds: at 500 runs started at once the last waited 25 s for its first byte (docs/performance.md). Each
 * copy of the listening descriptor is a handle of its own in the loop, so the server accepts up to ACCEPTORS a turn.
 * Node 22.12's `reusePort` would give the same with separate sockets; Node 20 has no way to duplicate a descriptor but
 * sending it to a child process and back. Done after the server listens, without delaying it; on any failure the
 * server keeps its one handle, as before.
 */
export function addAcceptors(server: net.Server, wanted = ACCEPTORS): Promise<Acceptors> {
  const copies: net.Server[] = [];
  const acceptors: Acceptors = {
    get count() {
      return 1 + copies.length;
    },
    close: async () => {
      await Promise.all(copies.splice(0).map((copy) => new Promise((resolve) => copy.close(resolve))));
    },
  };
  const handle = (server as unknown as { _handle?: unknown })._handle;
  if (wanted <= 1 || process.platform === 'win32' || !handle) return Promise.resolve(acceptors);
  return new Promise((resolve) => {
    // ELECTRON_RUN_AS_NODE: in the desktop app execPath is Electron, which must run this as plain Node.
    const child = spawn(process.execPath, ['-e', ECHO], {
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      env: { PATH: process.env.PATH, ELECTRON_RUN_AS_NODE: '1' },
    });
    let finished = false;
    const done = (why?: string) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (child.connected) child.send('end');
      child.removeAllListeners('message');
      if (why) log.debug(`accepting with ${acceptors.count} handle(s): ${why}`);
      resolve(acceptors);
    };
    const timer = setTimeout(() => done('the copies did not come back in time'), COPY_TIMEOUT_MS);
    // Every send still queued fails when the server's handle closes meanwhile (EINVAL), each with an 'error': one
    // left without a listener would end the process.
    child.on('error', (error) => done(error.message));
    child.once('exit', () => done());
    child.on('message', (_message, copy) => {
      if (!copy || !server.listening) return;
      const acceptor = new net.Server();
      // A connection accepted on a copy is the server's own: the HTTP server parses and tracks it as any other.
      acceptor.on('connection', (socket) => server.emit('connection', socket));
      acceptor.on('error', (error) => log.warn(`an extra accepting handle failed: ${error.message}`));
      acceptor.listen(copy as net.Server);
      copies.push(acceptor);
      if (copies.length === wanted - 1) done();
    });
    for (let i = 1; i < wanted; i++) child.send('copy', handle as net.Server);
  });
}
