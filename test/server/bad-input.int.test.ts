import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION } from '../../src-server/http/api';
import { useIntegrationServer } from '../helpers/integration';

interface Operation {
  method: string;
  path: string;
  params: string[];
  hasBody: boolean;
  /** The media type of its body, when it takes one: JSON, or a form (Slack's interactions). */
  bodyType: string | null;
}

// No model runtime listens here: any run that starts fails fast instead of waiting.
const ctx = useIntegrationServer({
  model: false,
  server: { LOCAL_LLM_BASE: 'http://127.0.0.1:9', BODY_LIMIT: '64kb' },
});
let operations: Operation[];

beforeAll(async () => {
  const doc = (await (await fetch(`${ctx.server.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      params: [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!),
      hasBody: Boolean(op.requestBody),
      bodyType: op.requestBody ? Object.keys(op.requestBody.content)[0]! : null,
    })),
  );
});

const oddText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '..',
    '%00',
    '%2e%2e%2f',
    'null',
    '0',
    '-1',
    'review',
    'summary',
    'gate',
    '00000000-0000-0000-0000-000000000000',
    '💥'.repeat(20),
    'a'.repeat(5000),
  ),
  fc.uuid(),
);

const deep = (depth: number): unknown =>
  depth === 0 ? 'leaf' : { nested: deep(depth - 1), list: [deep(depth - 1 > 3 ? 3 : 0)] };

const body = fc.oneof(
  fc.anything({ maxDepth: 4 }).map((v) => ({ raw: JSON.stringify(v) ?? 'null' })),
  fc
    .record({
      message: oddText,
      model: fc.option(oddText),
      thread_id: fc.option(oddText),
      project_path: fc.option(oddText),
    })
    .map((v) => ({ raw: JSON.stringify(v) })),
  fc
    .record({
      routing_overrides: fc.array(
        fc.record({
          condition: oddText,
          match: oddText,
          target: oddText,
          priority: fc.oneof(fc.integer(), fc.double(), oddText),
        }),
        { maxLength: 5 },
      ),
    })
    .map((v) => ({ raw: JSON.stringify(v) })),
  fc
    .constantFrom('{', '{"a":', '[1,2', 'nul', '"unterminated', '{"reason": 1e999999}', '\u0000', '{"reason":"\ud800"}')
    .map((raw) => ({ raw })),
  fc.constant({ raw: JSON.stringify(deep(40)) }),
  fc.constant({ raw: JSON.stringify({ reason: 'x'.repeat(100_000) }) }),
);

async function send(op: Operation, values: string[], payload: { raw: string } | null, contentType: string) {
  let path = op.path;
  op.params.forEach((name, i) => {
    path = path.replace(`{${name}}`, encodeURIComponent(values[i] ?? 'x'));
  });
  const res = await ctx.server.request(path, {
    method: op.method,
    headers: payload ? { 'content-type': contentType } : {},
    body: payload && op.method !== 'GET' ? payload.raw : undefined,
  });
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('text/event-stream')) {
    await res.body?.cancel();
    return { status: res.status, json: undefined };
  }
  const text = await res.text();
  return { status: res.status, json: type.includes('json') ? JSON.parse(text) : undefined, text };
}

describe('bad input on every endpoint of the OpenAPI document', () => {
  it('never gets a 5xx, and every error is the JSON envelope', async () => {
    expect(operations.length).toBeGreaterThan(10);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 10_000 }),
        fc.array(oddText, { minLength: 3, maxLength: 3 }),
        fc.option(body, { nil: null }),
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'text/plain',
          'application/x-www-form-urlencoded',
        ),
        async (pick, values, payload, contentType) => {
          const op = operations[pick % operations.length]!;
          const { status, json } = await send(op, values, payload, contentType);
          // No runtime listens here (LOCAL_LLM_BASE above): a request that is valid and needs it (deleting a model,
          // choosing a local default) is answered as a dependency that is down, 503 `unavailable`, never a 500.
          const runtimeDown =
            status === 503 &&
            op.path.startsWith('/models/') &&
            (json as { error?: { code?: string; message?: string } })?.error?.code === 'unavailable' &&
            /local model runtime/.test((json as { error: { message: string } }).error.message);
          if (!runtimeDown) expect(status, `${op.method} ${op.path}`).toBeLessThan(500);
          if (status >= 400) {
            expect(json, `${op.method} ${op.path} ${status}`).toMatchObject({
              error: { code: expect.any(String), message: expect.any(String) },
            });
          }
        },
      ),
      { numRuns: 400 },
    );
    expect((await fetch(`${ctx.server.url}/health`)).status).toBe(200);
  });

  it('answers a NUL in any text field with 400 naming the field, never a 500', async () => {
    const threadId = (
      await (await ctx.server.request('/threads', { method: 'POST', json: { agent: 'summary' } })).json()
    ).id;
    const cases: [string, string, Record<string, unknown>, string][] = [
      ['POST', '/graphs/summary/run', { message: 'hello\u0000world' }, 'message'],
      ['POST', '/graphs/summary/run', { message: 'x', model: 'llama\u0000' }, 'model'],
      ['POST', '/graphs/summary/run', { message: 'x', project_path: '/srv/repo\u0000/etc' }, 'project_path'],
      ['POST', '/threads', { agent: 'summary', project_path: '\u0000' }, 'project_path'],
      ['POST', '/orgs', { name: 'Org\u0000' }, 'name'],
      ['PUT', '/agents/review/nodes/analysis/config', { notes: 'see\u0000this' }, 'notes'],
      [
        'PUT',
        '/agents/review/nodes/analysis/config',
        { routing_overrides: [{ condition: 'contains', match: '\u0000', target: 'x', priority: 1 }] },
        'routing_overrides.0.match',
      ],
      ['POST', `/threads/${threadId}/gates/gate/reject`, { reason: 'no\u0000' }, 'reason'],
      ['POST', '/queue/reset', { reason: 'stale\u0000' }, 'reason'],
    ];
    for (const [method, path, json, field] of cases) {
      const res = await ctx.server.request(path, { method, json });
      expect(res.status, `${method} ${path} ${field}`).toBe(400);
      expect((await res.json()).error).toMatchObject({
        code: 'invalid_request',
        message: `invalid request body: ${field}: must not contain NUL characters`,
      });
    }
    expect(ctx.server.logs.filter((l) => l.includes(' ERROR ') && l.includes('unhandled'))).toEqual([]);
  });

  it('answers cursors that JavaScript takes and PostgreSQL refuses with 400 invalid cursor', async () => {
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const id = '0b6f5a54-2f43-4c57-9a57-8f1f2f0c7a10';
    const time = '2026-01-05T09:31:12.000000Z';
    for (const wrong of [
      ['older', time, '0', id],
      ['older', time, '2026-02-30T00:00:00.000000Z', id],
      ['older', time, '0000-01-01T00:00:00.000000Z', id],
      ['older', time, 'Mon, 05 Jan 2026 09:31:12 GMT', id],
      ['older', '2026-01-05T09:31:12.000Z', time, id],
      ['older', time, time, '-'.repeat(36)],
      ['older', time, time, 'gggggggg-gggg-gggg-gggg-gggggggggggg'],
      ['older', time, time, `${id}0`],
      ['older', time, null, null],
      ['sideways', time, time, id],
      [time, id],
      { updated_at: time, id },
    ]) {
      const res = await ctx.server.request(`/threads?cursor=${cursor(wrong)}`);
      expect(res.status, JSON.stringify(wrong)).toBe(400);
      expect(await res.json()).toEqual({ error: { code: 'invalid_request', message: 'invalid cursor' } });
    }
    expect((await ctx.server.request(`/threads?cursor=${cursor(['older', time, time, id])}`)).status).toBe(200);
    expect((await ctx.server.request(`/threads?cursor=${cursor(['newer', time, null, null])}`)).status).toBe(200);
  });

  it('answers an oversized body with 413 and the envelope', async () => {
    const res = await ctx.server.request('/threads', { method: 'POST', json: { agent: 'x'.repeat(200_000) } });
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe('payload_too_large');
  });
});

describe('a path that is not valid percent-encoding', () => {
  const TOKEN = 'bad-path-test-token-0123456789';
  const badSegments = ['%zz', '%', 'a%2', '%E2%82', '%C0%AF'];

  /** The answer and the log lines a request leaves, from a server whose log `logs` is. */
  async function answer(url: string, method: string, token: string | null, logs: string[]) {
    const before = logs.length;
    const res = await fetch(url, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
    const text = await res.text();
    return {
      status: res.status,
      version: res.headers.get('api-version'),
      json: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : null,
      lines: logs.slice(before),
    };
  }

  it('answers 400 invalid_request on every route with path parameters, with a token or without, and logs no stack trace', async () => {
    const secured = await ctx.start({ AUTH_ENABLED: 'true', SVC_API_TOKEN: TOKEN });
    const withParams = operations.filter((op) => op.params.length > 0);
    expect(withParams.length).toBeGreaterThan(10);
    const servers = [
      { name: 'authentication off', server: ctx.server, tokens: [null] },
      { name: 'authentication on', server: secured, tokens: [TOKEN, null] },
    ];
    for (const { name, server, tokens } of servers) {
      for (const op of withParams) {
        for (const [i, param] of op.params.entries()) {
          const bad = badSegments[i % badSegments.length]!;
          const path = op.params.reduce((p, other, j) => p.replace(`{${other}}`, j === i ? bad : 'x'), op.path);
          for (const token of tokens) {
            const what = `${name}, ${token ? 'token' : 'no token'}: ${op.method} ${path} (${param})`;
            const { status, version, json, lines } = await answer(
              `${server.url}${path}`,
              op.method,
              token,
              server.logs,
            );
            expect(status, what).toBe(400);
            expect(version, what).toBe(API_VERSION);
            expect(json, what).toEqual({
              error: { code: 'invalid_request', message: `invalid path: "${bad}" is not valid percent-encoded UTF-8` },
            });
            expect(
              lines.filter((line) => line.includes('\n') || line.includes(' ERROR ')),
              what,
            ).toEqual([]);
          }
        }
      }
    }
  });

  it('answers 400 on the studio, its files and any other page too', async () => {
    for (const path of [
      '/ui/%zz',
      '/ui/threads/%E2%82',
      '/ui/assets/%zz.js',
      '/docs/assets/%zz',
      '/%zz',
      '/nowhere/%C0%AF',
    ]) {
      const { status, json, lines } = await answer(`${ctx.server.url}${path}`, 'GET', null, ctx.server.logs);
      expect(status, path).toBe(400);
      expect(json?.error, path).toMatchObject({
        code: 'invalid_request',
        message: expect.stringMatching(/^invalid path: /),
      });
      expect(
        lines.filter((line) => line.includes('\n') || line.includes(' ERROR ')),
        path,
      ).toEqual([]);
    }
    // Valid escapes still reach their routes.
    expect((await fetch(`${ctx.server.url}/agents/%72eview/graph-definition`)).status).toBe(200);
    expect((await fetch(`${ctx.server.url}/ui/threads/a%20b`)).status).not.toBe(400);
  });
});

describe('bodies no JSON field of the API can hold', () => {
  /** A value for each path parameter that its route takes, so that the body is what the route has to refuse. */
  const PARAMS: Record<string, string> = {
    agent: 'summary',
    node: 'analysis',
    gate: 'gate',
    assistant_id: 'summary',
    grant_id: '1',
    call_id: '00000000-0000-4000-8000-00000000abcd:intake:1:0:0',
    stop_id: '00000000-0000-4000-8000-00000000abcd:1',
    // A secret is named as an environment variable is.
    name: 'TRACKER_TOKEN',
  };
  const paramValue = (name: string) => PARAMS[name] ?? '00000000-0000-4000-8000-00000000abcd';
  const deepBody = `{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
  // Escaped in the JSON text, as a client that writes UTF-16 halves sends them: the parsed string holds a lone half.
  const halves = ['{"x":"\\ud800"}', '{"x":["ok","\\udfff tail"]}', '{"\\udc00":"key"}'];

  it('answers 400 on every operation with a body, saying why, and logs no error', async () => {
    const withBody = operations.filter((op) => op.hasBody);
    expect(withBody.length).toBeGreaterThan(30);
    const before = ctx.server.logs.length;
    for (const op of withBody) {
      const path = op.params.reduce((p, name) => p.replace(`{${name}}`, paramValue(name)), op.path);
      for (const [raw, why] of [
        [deepBody, /^invalid request body: x(\.0)+: nests deeper than 64 levels$/],
        ...halves.map((h) => [h, /^invalid request body: .*is not valid Unicode text$/] as const),
      ] as const) {
        const res = await ctx.server.request(path, {
          method: op.method,
          headers: { 'content-type': 'application/json' },
          body: raw,
        });
        const what = `${op.method} ${op.path} ${raw.slice(0, 20)}`;
        // A route that takes a form says so, whatever the JSON holds.
        if (op.bodyType !== 'application/json') {
          expect(res.status, what).toBe(415);
          expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
            `request body must be ${op.bodyType}`,
          );
          continue;
        }
        expect(res.status, what).toBe(400);
        const json = (await res.json()) as { error: { code: string; message: string } };
        expect(json.error.code, what).toBe('invalid_request');
        expect(json.error.message, what).toMatch(why);
      }
    }
    const logged = ctx.server.logs.slice(before);
    expect(logged.filter((line) => line.includes(' ERROR ') || line.includes('\n'))).toEqual([]);
  });
});
