import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { API_TOKEN_ADMIN } from '../../src-server/auth/principal';
import type { RunAccepted } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { idempotencyKeysRepository } from '../../src-server/db/idempotency-keys.repository';
import { useIntegrationServer } from '../helpers/integration';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents } from '../helpers/sse';

/**
 * A script that sends a decision, a cancel or a run start again (its answer was lost, its connection cut) under the
 * same Idempotency-Key gets the first answer again, and nothing happens twice; a key is the caller's own, kept 24
 * hours, and only for the request it was first sent with.
 */
const SECRET = 'a-session-secret-for-the-idempotency-tests-01';
const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET } });

const keyed = (key: string, headers: Record<string, string> = {}) => ({ 'idempotency-key': key, ...headers });
const post = (path: string, headers: Record<string, string>, json?: unknown) =>
  ctx.server.request(path, { method: 'POST', headers, ...(json === undefined ? {} : { json }) });

/** A run of the fixture's gated agent, waiting at its gate. */
async function atGate(): Promise<{ runId: string; threadId: string }> {
  ctx.model.reply(['The analysis says: ship it.']);
  const started = await post('/agents/review/runs', {}, { message: 'Review this change' });
  const run = (await started.json()) as RunAccepted;
  const events = await readEvents(await ctx.server.request(run.stream_url));
  expect(events.at(-1)!.data.type).toBe('gate_waiting');
  return { runId: run.run_id, threadId: run.thread_id };
}

const runsOf = async (threadId: string) =>
  ((await (await ctx.server.request(`/threads/${threadId}/runs`)).json()) as { id: string }[]).map((r) => r.id);

describe('Idempotency-Key', () => {
  it('answers a retried approval with the first answer, and the gate is decided once', async () => {
    const { runId, threadId } = await atGate();
    const key = randomUUID();
    const first = await post(`/threads/${threadId}/gates/gate/approve`, keyed(key), { reason: 'looks right' });
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const firstBody = await first.text();
    const again = await post(`/threads/${threadId}/gates/gate/approve`, keyed(key), { reason: 'looks right' });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstBody);

    const events = await readEvents(await ctx.server.request(`/runs/${runId}/stream`));
    expect(events.filter((e) => e.data.type === 'gate_approved')).toHaveLength(1);
    expect(events.at(-1)!.data.type).toBe('run_done');
    const decisions = (await (await ctx.server.request(`/threads/${threadId}/decisions`)).json()) as unknown[];
    expect(decisions).toHaveLength(1);
    // Without the key, a second approval is a new request: the gate is no longer pending.
    expect((await post(`/threads/${threadId}/gates/gate/approve`, {}, { reason: 'looks right' })).status).toBe(409);
  });

  it('answers 422 to a key sent with another body or to another path, and acts on neither', async () => {
    const { threadId } = await atGate();
    const key = randomUUID();
    expect((await post(`/threads/${threadId}/gates/gate/reject`, keyed(key), { reason: 'not now' })).status).toBe(202);
    const otherBody = await post(`/threads/${threadId}/gates/gate/reject`, keyed(key), { reason: 'never' });
    expect(otherBody.status).toBe(422);
    expect((await otherBody.json()).error).toEqual({
      code: 'idempotency_key_reused',
      message: `Idempotency-Key "${key}" was used for another request (another path or body) in the last 24 hours: make a new key for a new request`,
    });
    const otherPath = await post('/agents/review/runs', keyed(key), { message: 'another run' });
    expect(otherPath.status).toBe(422);
    expect(await runsOf(threadId)).toHaveLength(1);
  });

  it('takes a left-out body and an empty one as the same request', async () => {
    const { runId } = await atGate();
    const key = randomUUID();
    const first = await ctx.server.request(`/runs/${runId}/cancel`, { method: 'POST', headers: keyed(key) });
    expect(first.status).toBe(200);
    const again = await post(`/runs/${runId}/cancel`, keyed(key), {});
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
  });

  it('answers 409 with Retry-After while the first request with the key is still being answered', async () => {
    const { threadId } = await atGate();
    const key = randomUUID();
    expect((await post(`/threads/${threadId}/gates/gate/approve`, keyed(key), {})).status).toBe(202);
    // Its record as the server holds it while the first request has no answer yet.
    await ctx.server.pool.query(
      'UPDATE svc_idempotency_keys SET status = NULL, body = NULL WHERE caller = $1 AND key = $2',
      [API_TOKEN_ADMIN.id, key],
    );
    const res = await post(`/threads/${threadId}/gates/gate/approve`, keyed(key), {});
    expect(res.status).toBe(409);
    expect(res.headers.get('retry-after')).toBe('1');
    expect((await res.json()).error.message).toBe(
      `the first request with Idempotency-Key "${key}" is still being answered: try again in a moment`,
    );
    // A claim that has had no answer for over a minute was abandoned (its process stopped): a retry acts again.
    await ctx.server.pool.query(
      `UPDATE svc_idempotency_keys SET created_at = now() - interval '2 minutes' WHERE caller = $1 AND key = $2`,
      [API_TOKEN_ADMIN.id, key],
    );
    const taken = await post(`/threads/${threadId}/gates/gate/approve`, keyed(key), {});
    expect(taken.status).toBe(409);
    expect((await taken.json()).error.message).not.toMatch(/still being answered/);
  });

  it('starts one run for a run start sent twice: the retry answers the same run, its stream from the first event', async () => {
    ctx.model.reply(['The analysis says: ship it.']);
    const key = randomUUID();
    const body = { message: 'Review this change once' };
    const first = await readEvents(await post('/graphs/review/run', keyed(key), body));
    expect(first.at(-1)!.data.type).toBe('gate_waiting');
    const start = first[0]!.data;
    if (start.type !== 'run_start') throw new Error(`the stream began with ${start.type}`);

    const replayed = await post('/graphs/review/run', keyed(key), body);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    const again = await readEvents(replayed);
    expect(again.map((e) => [e.id, e.data])).toEqual(first.map((e) => [e.id, e.data]));
    // The same run as JSON, for a retry that asks for JSON instead.
    const asJson = await post('/graphs/review/run', keyed(key, { accept: 'application/json' }), body);
    expect(((await asJson.json()) as RunAccepted).run_id).toBe(start.run_id);
    expect(await runsOf(start.thread_id)).toEqual([start.run_id]);
  });

  it('answers a retried JSON run start with the same run', async () => {
    ctx.model.reply(['The analysis says: ship it.']);
    const key = randomUUID();
    const first = (await (await post('/agents/review/runs', keyed(key), { message: 'once' })).json()) as RunAccepted;
    const again = await post('/agents/review/runs', keyed(key), { message: 'once' });
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual(first);
    expect(await runsOf(first.thread_id)).toEqual([first.run_id]);
    await readEvents(await ctx.server.request(first.stream_url));
  });

  it("keeps each caller's keys apart", async () => {
    ctx.model.reply(['The analysis says: ship it.']);
    const key = randomUUID();
    const userId = await addUser(ctx.server.pool, 'Ada', [['project', DEFAULT_PROJECT_ID, 'member']]);
    const ada = { authorization: `Bearer ${await signSession(userId, SECRET)}` };
    const body = { message: 'the same words' };
    const mine = (await (await post('/agents/review/runs', keyed(key), body)).json()) as RunAccepted;
    const hers = await post('/agents/review/runs', keyed(key, ada), body);
    expect(hers.status).toBe(202);
    expect(hers.headers.get('idempotent-replayed')).toBeNull();
    expect(((await hers.json()) as RunAccepted).run_id).not.toBe(mine.run_id);
  });

  it('keeps nothing for a request that failed, so its retry acts', async () => {
    const { runId, threadId } = await atGate();
    const key = randomUUID();
    // The gate is not "gate2": 404, and nothing is kept under the key.
    expect((await post(`/threads/${threadId}/gates/gate2/approve`, keyed(key), {})).status).toBe(404);
    const { rows } = await ctx.server.pool.query('SELECT 1 FROM svc_idempotency_keys WHERE key = $1', [key]);
    expect(rows).toEqual([]);
    const cancelled = await post(`/runs/${runId}/cancel`, keyed(key), {});
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as RunAccepted).status).toBe('cancelled');
  });

  it('forgets a key after 24 hours: the same key then acts again, and the hourly prune drops it', async () => {
    ctx.model.reply(['The analysis says: ship it.']);
    const key = randomUUID();
    const first = (await (await post('/agents/review/runs', keyed(key), { message: 'day one' })).json()) as RunAccepted;
    await readEvents(await ctx.server.request(first.stream_url));
    await ctx.server.pool.query(
      `UPDATE svc_idempotency_keys SET created_at = now() - interval '24 hours 1 minute' WHERE key = $1`,
      [key],
    );
    ctx.model.reply(['The analysis says: ship it.']);
    const later = await post('/agents/review/runs', keyed(key), { message: 'day one' });
    expect(later.status).toBe(202);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    const second = (await later.json()) as RunAccepted;
    expect(second.run_id).not.toBe(first.run_id);
    await readEvents(await ctx.server.request(second.stream_url));

    await ctx.server.pool.query(
      `UPDATE svc_idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1`,
      [key],
    );
    expect(await idempotencyKeysRepository(ctx.server.pool).prune()).toBeGreaterThanOrEqual(1);
    const { rows } = await ctx.server.pool.query('SELECT 1 FROM svc_idempotency_keys WHERE key = $1', [key]);
    expect(rows).toEqual([]);
  });

  it('refuses a key that is not visible ASCII, or longer than 255 characters', async () => {
    for (const key of ['a key with spaces', 'x'.repeat(256)]) {
      const res = await post('/agents/review/runs', keyed(key), { message: 'x' });
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(/^invalid request headers: Idempotency-Key: /);
    }
  });
});
