/// <reference types="node" />
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueueStatusSchema } from '@contracts/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, ApiError, ResponseShapeError } from './http';

/** A real loopback server answering each path with the JSON the test gives it. */
let server: http.Server;
let base = '';
const answers = new Map<string, { status: number; body: unknown }>();
beforeAll(async () => {
  server = http.createServer((req, res) => {
    const answer = answers.get(req.url!.split('?')[0]!) ?? {
      status: 404,
      body: { error: { code: 'not_found', message: 'no' } },
    };
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The studio reads its token from localStorage; Node has none, and no token is needed here.
  Object.assign(globalThis, { localStorage: { getItem: () => null } });
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const status = {
  runtime: 'http://127.0.0.1:11434',
  slots: 2,
  active: 1,
  waiting: 0,
  served: 5,
  timed_out: 0,
  average_call_s: null,
};

describe('REST answers checked against the server schema', () => {
  it('returns an answer of the right shape', async () => {
    answers.set('/queue/status', { status: 200, body: status });
    expect(await api(`${base}/queue/status`, { schema: QueueStatusSchema })).toEqual(status);
  });

  it('fails an answer of another shape with what differs, instead of handing it to a component', async () => {
    answers.set('/queue/status', { status: 200, body: { ...status, active: 'one' } });
    await expect(api(`${base}/queue/status`, { schema: QueueStatusSchema })).rejects.toThrow(ResponseShapeError);
    await expect(api(`${base}/queue/status?x=1`, { schema: QueueStatusSchema })).rejects.toThrow(
      new RegExp(`^GET ${base.replace(/[.]/g, '\\.')}/queue/status answered in an unexpected shape: active: `),
    );
  });

  it('still turns an error answer into ApiError, schema or not', async () => {
    answers.set('/queue/status', { status: 503, body: { error: { code: 'unavailable', message: 'down' } } });
    await expect(api(`${base}/queue/status`, { schema: QueueStatusSchema })).rejects.toBeInstanceOf(ApiError);
  });
});
