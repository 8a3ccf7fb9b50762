import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local model runtime speaking Ollama's /api/chat NDJSON stream, scripted per test:
 * which tokens each call streams and how fast, or an error to answer with.
 */
export interface ModelFake {
  url: string;
  /** Request bodies received, in order. */
  requests: unknown[];
  /** Streams the client dropped before the end (an aborted call). */
  disconnects: number;
  reply(tokens: string[], delayMs?: number): void;
  fail(status: number, message: string): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startModelFake(): Promise<ModelFake> {
  let tokens = ['ok'];
  let delayMs = 0;
  let failure: { status: number; message: string } | undefined;
  const fake: Omit<ModelFake, 'url' | 'close'> = {
    requests: [],
    disconnects: 0,
    reply(next, delay = 0) {
      tokens = next;
      delayMs = delay;
      failure = undefined;
    },
    fail(status, message) {
      failure = { status, message };
    },
    reset() {
      tokens = ['ok'];
      delayMs = 0;
      failure = undefined;
    },
  };

  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    if (req.url === '/api/tags') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ models: [{ name: 'fake-model', model: 'fake-model', size: 1 }] }));
      return;
    }
    const request = JSON.parse(body || '{}') as { model?: string };
    fake.requests.push(request);
    if (failure) {
      res.writeHead(failure.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: failure.message }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    let closed = false;
    res.on('close', () => {
      if (!res.writableFinished) {
        closed = true;
        fake.disconnects++;
      }
    });
    const script = tokens;
    for (const token of script) {
      if (closed) return;
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      res.write(`${JSON.stringify({ model: request.model, created_at: new Date().toISOString(), message: { role: 'assistant', content: token }, done: false })}\n`);
    }
    res.end(
      `${JSON.stringify({ model: request.model, created_at: new Date().toISOString(), message: { role: 'assistant', content: '' }, done: true, done_reason: 'stop', eval_count: script.length, prompt_eval_count: 1 })}\n`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...fake,
    get requests() {
      return fake.requests;
    },
    get disconnects() {
      return fake.disconnects;
    },
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  } as ModelFake;
}
