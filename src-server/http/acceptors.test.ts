import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ACCEPTORS, addAcceptors, type Acceptors } from './acceptors';

/** `count` connections opened at once by another process, which then waits to be killed. */
function connectFrom(port: number, count: number) {
  return spawn(process.execPath, [
    '-e',
    `const net = require('net'); for (let i = 0; i < ${count}; i++) net.connect(${port}, '127.0.0.1'); setInterval(() => {}, 1000);`,
  ]);
}

describe('extra accepting handles', () => {
  let server: http.Server;
  let acceptors: Acceptors | undefined;
  afterEach(async () => {
    server.closeAllConnections();
    await Promise.all([acceptors?.close(), new Promise((resolve) => server.close(resolve))]);
  });

  const listen = async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };

  it('let a burst of connections in many per turn of a busy event loop, not one', async () => {
    server = http.createServer();
    const port = await listen();
    acceptors = await addAcceptors(server);
    expect(acceptors.count).toBe(ACCEPTORS);

    // Each turn of the loop is kept busy for 30 ms, as hundreds of streams keep it under load.
    let accepted = 0;
    server.on('connection', () => accepted++);
    const perTurn: number[] = [];
    const busy = setInterval(() => {
      const until = Date.now() + 30;
      while (Date.now() < until);
      perTurn.push(accepted);
      accepted = 0;
    }, 0);
    const clients = connectFrom(port, 160);
    try {
      await new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (perTurn.reduce((a, n) => a + n, 0) >= 160) {
            clearInterval(check);
            resolve();
          }
        }, 0);
      });
    } finally {
      clearInterval(busy);
      clients.kill();
    }
    // One handle lets one in per turn (160 turns, about 5 s here); ACCEPTORS let in up to as many.
    expect(Math.max(...perTurn)).toBeGreaterThan(8);
    expect(perTurn.filter((n) => n > 0).length).toBeLessThan(40);
  }, 30_000);

  it('serve what a copy accepts as the server’s own requests, and stop accepting once closed', async () => {
    server = http.createServer((_req, res) => res.end('served'));
    const port = await listen();
    acceptors = await addAcceptors(server);
    // Enough requests on fresh connections that copies accept some of them.
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' } }).then((r) => r.text()),
      ),
    );
    expect(new Set(answers)).toEqual(new Set(['served']));

    await Promise.all([acceptors.close(), new Promise((resolve) => server.close(resolve))]);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
    server.listen(0, '127.0.0.1'); // for afterEach's close
  });

  it('leave the process up when the server closes while its copies are on their way', async () => {
    const uncaught: Error[] = [];
    const onUncaught = (error: Error) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      server = http.createServer();
      await listen();
      const adding = addAcceptors(server);
      // Closed before the copies are sent: sending a descriptor that is gone fails each send still queued.
      server.close();
      acceptors = await adding;
      expect(acceptors.count).toBe(1);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      server.listen(0, '127.0.0.1'); // for afterEach's close
    }
  });

  it('keep to the server’s own handle when more are not wanted', async () => {
    server = http.createServer();
    await listen();
    acceptors = await addAcceptors(server, 1);
    expect(acceptors.count).toBe(1);
  });
});
