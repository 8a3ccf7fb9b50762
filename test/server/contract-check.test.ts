import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src-server/http/app';
import { registerServer } from '../helpers/contract';

/**
 * The contract check every integration test's requests pass through (test/helpers/contract.ts) must fail a test
 * when a server drifts from its document. Here a stand-in serves the real document and answers each path as the
 * test scripts it, wrong on purpose.
 */
const document = JSON.stringify(openApiDocument('0.0.0-test'));
const answers = new Map<string, { status: number; type?: string; body?: string; headers?: Record<string, string> }>();
let server: http.Server;
let url: string;
let contract: { stop(): void };

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/openapi.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(document);
      return;
    }
    const answer = answers.get(`${req.method} ${req.url}`) ?? { status: 500 };
    res
      .writeHead(answer.status, { ...answer.headers, ...(answer.type ? { 'content-type': answer.type } : {}) })
      .end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  contract = registerServer(url);
});
afterAll(async () => {
  contract.stop();
  await new Promise((resolve) => server.close(resolve));
});

const answer = (key: string, status: number, body?: unknown, type = 'application/json') =>
  answers.set(key, { status, type, body: body === undefined ? undefined : JSON.stringify(body) });

const thread = {
  id: '6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b',
  name: null,
  agent: 'summary',
  model: null,
  last_message: null,
  project_path: null,
  project_id: '00000000-0000-4000-8000-000000000003',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  last_run: null,
  draft: false,
  comparison_of: null,
  imported: null,
};

describe('the contract check of the integration tests', () => {
  it('passes an answer the document declares', async () => {
    answer('GET /threads?limit=1', 200, { items: [thread], next_cursor: null });
    expect((await fetch(`${url}/threads?limit=1`)).status).toBe(200);
    answer('DELETE /threads/6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b', 204, undefined, '');
    expect((await fetch(`${url}/threads/${thread.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('fails a redirect with a body or without the Location the document declares', async () => {
    answers.set('GET /auth/login', { status: 302, type: 'text/plain', body: 'Found. Redirecting to x' });
    await expect(fetch(`${url}/auth/login`, { redirect: 'manual' })).rejects.toThrow(
      /startLogin\) 302 declares a Location header but sent none/,
    );
    answers.set('GET /auth/login', {
      status: 302,
      type: 'text/plain',
      body: 'Found. Redirecting to x',
      headers: { location: 'https://idp.example/authorize' },
    });
    await expect(fetch(`${url}/auth/login`, { redirect: 'manual' })).rejects.toThrow(
      /startLogin\) 302 declares no body but sent Found/,
    );
  });

  it('fails a status the operation does not declare', async () => {
    answer('GET /health', 404, { error: { code: 'not_found', message: 'x' } });
    await expect(fetch(`${url}/health`)).rejects.toThrow(/GET \/health \(getHealth\) answered 404/);
  });

  it('fails a body that does not match the declared schema', async () => {
    answer('GET /threads', 200, { items: [{ ...thread, id: 42 }], next_cursor: null });
    await expect(fetch(`${url}/threads`)).rejects.toThrow(/listThreads\) 200 body does not match.*\/items\/0\/id/);
  });

  it('fails a field the schema does not name', async () => {
    answer('GET /threads?limit=2', 200, { items: [{ ...thread, owner_secret: 'x' }], next_cursor: null });
    await expect(fetch(`${url}/threads?limit=2`)).rejects.toThrow(/must NOT have additional properties.*owner_secret/);
  });

  it('fails an error code the document does not list, and an error without the envelope', async () => {
    answer('GET /threads/6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b', 404, { error: { code: 'gone', message: 'x' } });
    await expect(fetch(`${url}/threads/${thread.id}`)).rejects.toThrow(/getThread\) 404 body does not match/);
    answer('GET /threads/6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b', 404, { message: 'x' });
    await expect(fetch(`${url}/threads/${thread.id}`)).rejects.toThrow(/getThread\) 404 body does not match/);
  });

  it('fails a media type the document does not declare for the status', async () => {
    answers.set('GET /agents', { status: 200, type: 'text/plain', body: 'summary' });
    await expect(fetch(`${url}/agents`)).rejects.toThrow(/listAgents\) 200 sent text\/plain/);
  });

  it('fails a body the server took that the document refuses', async () => {
    const scope = { id: thread.id, name: 'Platform', parent_id: thread.id, role: null, created_at: thread.created_at };
    answer('POST /teams', 201, scope);
    const post = (json: unknown) =>
      fetch(`${url}/teams`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
    await expect(post({ name: 'Platform' })).rejects.toThrow(/createTeam\) took a body the document refuses/);
    expect((await post({ name: 'Platform', parent_id: thread.id })).status).toBe(201);
    answer('POST /teams', 400, { error: { code: 'invalid_request', message: 'invalid request body: parent_id: x' } });
    expect((await post({ name: 'Platform' })).status).toBe(400);
  });

  it('leaves answers outside the API alone', async () => {
    answers.set('GET /ui', { status: 200, type: 'text/html', body: '<!doctype html>' });
    expect((await fetch(`${url}/ui`)).status).toBe(200);
  });
});
