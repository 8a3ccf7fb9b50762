import express from 'express';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_BEHIND_BYTES, MAX_UNREAD_BYTES, openSse, type SseStream } from './sse';

const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

/** A server whose one route opens a stream, sends `bytes` of frames at once, then waits for room and ends. */
async function streamingServer(bytes: number) {
  /** Streams whose client took enough to make room for more: not a slow reader 16 MiB behind. */
  let roomed = 0;
  const app = express();
  const responses: express.Response[] = [];
  app.get('/stream', (_req, res) => {
    responses.push(res);
    const stream: SseStream = openSse(res);
    const frame = `event: token\nid: 1\ndata: ${JSON.stringify({ text: 'x'.repeat(2000) })}\n\n`;
    for (let sent = 0; sent < bytes; sent += frame.length) stream.send(frame);
    // As the catch-up of stored events does: the next page waits until the client has room for it.
    setImmediate(
      () =>
        void stream.room().then(() => {
          if (!res.destroyed) roomed++;
          stream.end();
        }),
    );
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => server.close());
  return {
    port: (server.address() as AddressInfo).port,
    roomed: () => roomed,
    /** How many streams the server dropped: destroyed before they ended. */
    dropped: () => responses.filter((r) => r.destroyed && !r.writableEnded).length,
  };
}

/** A raw client that reads about `chunk` bytes every `everyMs` (none when 0): slow, but reading. */
function slowReader(port: number, chunk: number, everyMs: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  let received = 0;
  let inWindow = 0;
  socket.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
  socket.on('data', (data: Buffer) => {
    received += data.length;
    inWindow += data.length;
    if (inWindow >= chunk) socket.pause();
  });
  if (chunk === 0) socket.pause();
  const timer = setInterval(() => {
    inWindow = 0;
    if (chunk > 0) socket.resume();
  }, everyMs);
  closers.push(() => {
    clearInterval(timer);
    socket.destroy();
  });
  return { received: () => received };
}

describe('the SSE writer and slow readers', () => {
  it('keeps a client that reads slowly, however long it takes to drain, and drops one that stops reading', async () => {
    const server = await streamingServer(7 * MAX_UNREAD_BYTES);
    // About 300 KB a second: what the kernel's buffers do not hold takes it longer than the 5 s it was once given;
    // the other reads nothing.
    const slow = slowReader(server.port, 150_000, 500);
    slowReader(server.port, 0, 500);
    await new Promise((resolve) => setTimeout(resolve, 18_000));
    expect(slow.received()).toBeGreaterThan(2 * MAX_UNREAD_BYTES);
    expect(server.dropped()).toBe(1);
  }, 30_000);

  it('drops a reader that falls more than MAX_BEHIND_BYTES behind at once: it catches up from the store instead', async () => {
    const server = await streamingServer(MAX_BEHIND_BYTES + MAX_UNREAD_BYTES);
    const slow = slowReader(server.port, 150_000, 500);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(server.dropped()).toBe(1);
    expect(slow.received()).toBeLessThan(MAX_BEHIND_BYTES);
  });
});

describe('the streams it tells a watcher of', () => {
  it('counts a stream open until its client leaves, also one whose client left before it opened', async () => {
    let open = 0;
    const watcher = { streamOpened: () => open++, streamClosed: () => open-- };
    const streams: SseStream[] = [];
    const app = express();
    app.get('/stream', (req, res) => {
      streams.push(openSse(res, watcher));
    });
    // Opened only once its client has gone, as when a client leaves while its request is being answered.
    app.get('/late', (req, res) => {
      res.once('close', () => setImmediate(() => streams.push(openSse(res, watcher))));
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    closers.push(() => server.close());
    const port = (server.address() as AddressInfo).port;
    const connect = (path: string) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      return socket;
    };
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
    };

    const client = connect('/stream');
    await until(() => streams.length === 1);
    expect(open).toBe(1);
    client.destroy();
    await streams[0]!.closed;
    expect(open).toBe(0);

    const early = connect('/late');
    await new Promise((resolve) => setTimeout(resolve, 50));
    early.destroy();
    await until(() => streams.length === 2);
    await streams[1]!.closed;
    expect(open).toBe(0);
  });
});

describe('a stream that fails on the server', () => {
  it('is cut rather than ended, so that the client sees it broken and re-attaches, not a run that ended', async () => {
    const app = express();
    app.get('/stream', (_req, res) => {
      const stream = openSse(res);
      stream.send('id: 1\nevent: token\ndata: {"type":"token","node":"n","text":"a"}\n\n');
      setTimeout(() => {
        stream.fail('reading the store failed');
        stream.end();
      }, 50);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    closers.push(() => server.close());
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/stream`);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = '';
    const outcome = await (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return 'ended';
        received += value;
      }
    })().catch((error: Error) => `broken: ${error.message}`);
    expect(received).toContain('id: 1\nevent: token');
    expect(outcome).toBe('broken: terminated');
  });
});
