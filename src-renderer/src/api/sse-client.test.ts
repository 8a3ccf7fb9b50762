/// <reference types="node" />
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventStream, parseFrame, StreamProtocolError, type StreamedEvent } from './sse-client';

describe('the SSE frame parser', () => {
  it('reads the id and the event, and skips comment lines', () => {
    expect(parseFrame(': keep-alive\nid: 7\nevent: token\ndata: {"type":"token","node":"a","text":"hi"}')).toEqual({
      id: 7,
      event: { type: 'token', node: 'a', text: 'hi' },
    });
  });

  it('joins several data lines with a newline, and takes "field:value" without the space', () => {
    const frame = 'id:3\ndata:{"type":"token","node":"a",\ndata: "text":"x"}';
    expect(parseFrame(frame)).toEqual({ id: 3, event: { type: 'token', node: 'a', text: 'x' } });
  });

  it('gives nothing for a frame without data (a keep-alive comment alone)', () => {
    expect(parseFrame(': ping')).toBeNull();
    expect(parseFrame('id: 4')).toBeNull();
  });

  it('refuses data that is not JSON, and an event the shared union does not describe', () => {
    expect(() => parseFrame('data: {not json')).toThrow(StreamProtocolError);
    expect(() => parseFrame('data: {not json')).toThrow('the run stream sent data that is not JSON: {not json');
    expect(() => parseFrame('data: {"type":"token","node":"a"}')).toThrow('the run stream sent an unknown event');
    expect(() => parseFrame('data: {"type":"no_such_event"}')).toThrow(StreamProtocolError);
  });
});

/** A real loopback server that writes a stream in the pieces a test gives, one write per piece. */
let server: http.Server;
let pieces: string[] = [];
let base = '';
beforeAll(async () => {
  server = http.createServer(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const piece of pieces) {
      res.write(piece);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The studio reads its token from localStorage; Node has none, and no token is needed here.
  Object.assign(globalThis, { localStorage: { getItem: () => null } });
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function read(parts: string[]): Promise<StreamedEvent[]> {
  pieces = parts;
  const events: StreamedEvent[] = [];
  await openEventStream(`${base}/runs/x/stream`, { signal: new AbortController().signal }, (e) => events.push(e));
  return events;
}

describe('a run stream read over HTTP', () => {
  it('puts frames back together whatever the pieces they arrive in, with CRLF line ends too', async () => {
    const frames = [
      'id: 1\r\nevent: node_enter\r\ndata: {"type":"node_enter","node":"intake"}\r\n\r\n',
      ': keep-alive\n\n',
      'id: 2\nevent: token\ndata: {"type":"token","node":"intake","text":"Hé ✓"}\n\n',
      'id: 3\ndata: {"type":"token","node":"intake","text":"\\n\\nnext"}\n\n',
    ].join('');
    // Cut everywhere: inside a field, between \r and \n, inside a multi-byte character's frame.
    const cuts = [6, 40, 41, 63, 90, 91, 140];
    const parts = cuts.map((cut, i) => frames.slice(i === 0 ? 0 : cuts[i - 1], cut)).concat(frames.slice(cuts.at(-1)));
    expect(parts.join('')).toBe(frames);
    expect(await read(parts)).toEqual([
      { id: 1, event: { type: 'node_enter', node: 'intake' } },
      { id: 2, event: { type: 'token', node: 'intake', text: 'Hé ✓' } },
      { id: 3, event: { type: 'token', node: 'intake', text: '\n\nnext' } },
    ]);
  });

  it('gives nothing of a last frame the server did not finish', async () => {
    const events = await read([
      'id: 1\ndata: {"type":"node_enter","node":"a"}\n\n',
      'id: 2\ndata: {"type":"token","node":"a","te',
    ]);
    expect(events.map((e) => e.id)).toEqual([1]);
  });

  it('stops with a protocol error at an event the studio does not know', async () => {
    await expect(read(['id: 1\ndata: {"type":"mystery"}\n\n'])).rejects.toThrow(StreamProtocolError);
  });
});
