import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { createPool, type Pool } from '../../src-server/db/pool';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';

/**
 * Request limits (docs/operations.md#rate-limits) on a real server: per token on the API, /lg and /mcp, per address
 * on the doors without a token, answered 429 with Retry-After in the error envelope; none with authentication off.
 */
const SECRET = 'a-session-secret-for-the-rate-limit-tests-01';
const API_TOKEN = 'rate-limit-test-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let pool: Pool;
let ann: string;

beforeAll(async () => {
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    RATE_LIMIT_PER_MINUTE: '6',
    RATE_LIMIT_ADDRESS_PER_MINUTE: '3',
  });
  pool = createPool(ctx.db.url, 1);
  ann = await signSession(await addUser(pool, 'Ann', [['project', DEFAULT_PROJECT_ID, 'member']]), SECRET);
});
afterAll(async () => {
  await server?.close();
  await pool?.end();
});

const as = (token: string, extra: Record<string, string> = {}) => ({
  headers: { authorization: `Bearer ${token}`, ...extra },
});

async function refused(response: Response, pattern: RegExp): Promise<number> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(response.status).toBe(429);
  expect(body.error.code).toBe('too_many_requests');
  expect(body.error.message).toMatch(pattern);
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  return retryAfter;
}

describe('request limits', () => {
  it('answer a token over its rate 429 with Retry-After, on the API, /lg and /mcp alike; other tokens go on', async () => {
    for (let i = 0; i < 4; i++) expect((await server.request('/threads', as(API_TOKEN))).status).toBe(200);
    // The LangGraph API counts against the same token, sent as LangGraph's clients send it.
    expect(
      (await server.request('/lg/threads/search', { method: 'POST', json: {}, headers: { 'x-api-key': API_TOKEN } }))
        .status,
    ).toBe(200);
    expect((await server.request('/threads', as(API_TOKEN))).status).toBe(200);
    await refused(
      await server.request('/threads', as(API_TOKEN)),
      /^more than 6 requests a minute with this token: try again in \d+ s$/,
    );
    await refused(
      await server.request('/lg/threads/search', { method: 'POST', json: {}, headers: { 'x-api-key': API_TOKEN } }),
      /with this token/,
    );
    await refused(
      await server.request('/mcp', {
        method: 'POST',
        json: { jsonrpc: '2.0', id: 1, method: 'ping' },
        ...as(API_TOKEN, { accept: 'application/json, text/event-stream' }),
      }),
      /with this token/,
    );
    // Another person's token has its own count.
    expect((await server.request('/threads', as(ann))).status).toBe(200);
    // A public page asked without a token is counted against no one.
    for (let i = 0; i < 10; i++)
      expect((await server.request('/health', { headers: { authorization: '' } })).status).toBe(200);
  });

  it('counts the doors without a token per address', async () => {
    // No identity provider here: sign-in answers 404, each answer counted all the same.
    const noToken = { headers: { authorization: '' } };
    for (let i = 0; i < 3; i++) expect((await server.request('/auth/login', noToken)).status).toBe(404);
    await refused(
      await server.request('/auth/login', noToken),
      /^more than 3 requests a minute to this door from your address: try again in \d+ s$/,
    );
  });

  it('is off by default with authentication off: past the 1,200 a minute it allows a token with it on', async () => {
    // Empty is unset: the server's own default, not the test harness's.
    const open = await ctx.start({
      AUTH_ENABLED: 'false',
      RATE_LIMIT_PER_MINUTE: '',
      RATE_LIMIT_ADDRESS_PER_MINUTE: '',
    });
    try {
      const statuses = new Set<number>();
      for (let batch = 0; batch < 26; batch++) {
        const answers = await Promise.all(Array.from({ length: 50 }, () => open.request('/threads?limit=1')));
        for (const answer of answers) statuses.add(answer.status);
      }
      expect([...statuses]).toEqual([200]);
    } finally {
      await open.close();
    }
  });
});
