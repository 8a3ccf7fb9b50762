import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { causeCode } from './errors';
import { ResponseError, streamOllamaChat } from './ollama-chat';
import { passingFailure } from './retries';

/**
 * The chat call's reading of the runtime's answer over real loopback HTTP: what reaches the run when the answer comes
 * in awkward pieces, or does not come as it should. The model a call names picks how the runtime below answers.
 */
const line = (value: unknown) => `${JSON.stringify(value)}\n`;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: http.Server;
let base: string;

async function answer(model: string, res: http.ServerResponse): Promise<void> {
  if (model === 'missing') {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'model "missing" not found, try pulling it first' }));
    return;
  }
  if (model === 'busy') {
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end('busy');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  if (model === 'split') {
    // "€" is three bytes in UTF-8: the first read ends inside it, and inside its line.
    const whole = Buffer.from(line({ message: { content: 'price: 5€' } }) + line({ done: true, done_reason: 'stop' }));
    const cut = whole.indexOf(Buffer.from('€')) + 1;
    res.write(whole.subarray(0, cut));
    await pause(30);
    res.end(whole.subarray(cut));
    return;
  }
  res.write(line({ message: { content: 'first' } }));
  await pause(30);
  if (model === 'reset') {
    res.socket?.destroy();
    return;
  }
  // 'slow': the rest comes long after the test has stopped waiting.
  await pause(2000);
  res.end(line({ done: true }));
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => void answer((JSON.parse(body) as { model: string }).model, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function chat(model: string, signal = new AbortController().signal) {
  const tokens: string[] = [];
  const result = streamOllamaChat(base, { model, messages: [{ role: 'user', content: 'hi' }] }, signal, (text) =>
    tokens.push(text),
  );
  return { tokens, result };
}

/** The error a call failed with; the test fails if it did not. */
async function failure(result: Promise<unknown>): Promise<unknown> {
  return result.then(
    () => expect.unreachable('the call succeeded'),
    (error: unknown) => error,
  );
}

describe("reading the local runtime's chat", () => {
  it('keeps a character whose bytes come in two reads whole', async () => {
    const { tokens, result } = chat('split');
    await expect(result).resolves.toMatchObject({ text: 'price: 5€', done_reason: 'stop' });
    expect(tokens).toEqual(['price: 5€']);
  });

  it("fails with the runtime's own words, or its status and reason when it gives none", async () => {
    const missing = await failure(chat('missing').result);
    expect(missing).toBeInstanceOf(ResponseError);
    expect(missing).toMatchObject({ message: 'model "missing" not found, try pulling it first', status: 404 });
    const busy = await failure(chat('busy').result);
    expect(busy).toMatchObject({ name: 'ResponseError', message: '503 Service Unavailable', status: 503 });
    expect(passingFailure(busy)).toBe('the provider answered 503');
  });

  it('rejects with the reason of an abort that comes while the answer streams', async () => {
    const controller = new AbortController();
    const { tokens, result } = chat('slow', controller.signal);
    setTimeout(() => controller.abort(new Error('run cancelled')), 100);
    expect(await failure(result)).toEqual(new Error('run cancelled'));
    expect(tokens).toEqual(['first']);
  });

  it('names a connection the runtime broke, and one it refused, as failures worth another try', async () => {
    const broken = await failure(chat('reset').result);
    expect(causeCode(broken)).toBe('UND_ERR_SOCKET');
    expect(passingFailure(broken)).toBe('the connection failed (UND_ERR_SOCKET)');

    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await failure(
      streamOllamaChat(
        `http://127.0.0.1:${port}`,
        { model: 'm', messages: [] },
        new AbortController().signal,
        () => undefined,
      ),
    );
    expect(causeCode(refused)).toBe('ECONNREFUSED');
    expect(passingFailure(refused)).toBe('the connection failed (ECONNREFUSED)');
  });
});
