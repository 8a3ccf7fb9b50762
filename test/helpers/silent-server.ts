import net from 'node:net';

export interface SilentServer {
  port: number;
  /** How many connections it has accepted. */
  connections(): number;
  /** How many of them have closed since. */
  closed(): number;
  /** Drops every connection and stops listening. */
  close(): Promise<void>;
}

/**
 * A TCP server on loopback that accepts and never answers (a stuck git host); it counts connections and
 * notices when they close, so a test can see that a cancelled clone lets go of its connection.
 */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets: net.Socket[] = [];
  let closed = 0;
  const server = net.createServer((socket) => {
    sockets.push(socket);
    // Reading (and dropping) what arrives, so that the peer's end is seen.
    socket.resume();
    socket.on('close', () => (closed += 1));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => sockets.length,
    closed: () => closed,
    close: () =>
      new Promise((resolve) => {
        sockets.forEach((s) => s.destroy());
        server.close(() => resolve());
      }),
  };
}
