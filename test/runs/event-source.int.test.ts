import net from 'node:net';
import { SignJWT } from 'jose';
import { EventSource } from 'eventsource';
import { describe, expect, it } from 'vitest';
import { STREAM_AUDIENCE, STREAM_ISSUER } from '../../src-server/auth/authenticator';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import { RunEventSchema, SSE_RETRY_MS, type RunEvent } from '../../src-server/contracts/events';
import { numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

const SECRET = 'a-session-secret-for-the-event-source-test';
const EVENT_NAMES = RunEventSchema.options.map((option) => option.shape.type.value);

const ctx = useIntegrationServer();

interface Followed {
  source: EventSource;
  events: { id: number; data: RunEvent }[];
  /** `error` events: a cut connection, or the answer that ended the source (status in `code`). */
  errors: { code?: number; message?: string }[];
}

/** An EventSource (the WHATWG one a browser has) on `url`, listening by name to every event the document lists. */
function follow(url: string): Followed {
  const source = new EventSource(url);
  const followed: Followed = { source, events: [], errors: [] };
  for (const name of EVENT_NAMES) {
    source.addEventListener(name, (message) => {
      followed.events.push({ id: Number(message.lastEventId), data: RunEventSchema.parse(JSON.parse(message.data)) });
    });
  }
  source.addEventListener('error', (error) => followed.errors.push({ code: error.code, message: error.message }));
  return followed;
}

/** Until the source has stopped for good; two reconnect delays and a run fit in, on a busy machine too. */
const closed = (followed: Followed) =>
  until(async () => followed.source.readyState === EventSource.CLOSED || undefined, 30_000);

/** A TCP proxy in front of the server whose open connections a test can cut, as a network would. */
async function cuttableProxy(target: string) {
  const { port: targetPort } = new URL(target);
  const sockets = new Set<net.Socket>();
  let requests = 0;
  const server = net.createServer((client) => {
    // Requests, not connections: a connection may carry the next request once a stream has ended.
    client.on('data', (chunk: Buffer) => (requests += chunk.toString('latin1').match(/^GET \//gm)?.length ?? 0));
    const upstream = net.connect(Number(targetPort), '127.0.0.1');
    client.pipe(upstream).pipe(client);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    requests: () => requests,
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Starts a run and answers its RunAccepted at once (the JSON alternative of the run's stream). */
async function startRun(server: TestServer, agent: string, message: string, init: RequestInit = {}) {
  const res = await server.request(`/graphs/${agent}/run`, {
    ...init,
    method: 'POST',
    json: { message },
    headers: { ...init.headers, accept: 'application/json' },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { run_id: string; thread_id: string; stream_url: string; last_event_id: number };
}

describe('an EventSource following a run', () => {
  it('follows it through a cut connection with no event missed or repeated, and stops by itself after the end', async () => {
    ctx.model.reply(numberedTokens(40, 'w'), 30);
    const proxy = await cuttableProxy(ctx.server.url);
    try {
      const run = await startRun(ctx.server, 'summary', 'follow me');
      expect(run.stream_url).toBe(`/runs/${run.run_id}/stream?last_event_id=0`);
      const followed = follow(`${proxy.url}/runs/${run.run_id}/stream`);
      await until(async () => (followed.events.length >= 5 ? true : undefined));
      proxy.cut();
      const atCut = followed.events.length;
      await closed(followed);

      const ids = followed.events.map((e) => e.id);
      expect(ids).toEqual(ids.map((_, i) => i + 1));
      expect(followed.events.at(-1)!.data).toMatchObject({ type: 'run_done', run_id: run.run_id });
      // The same events as a client that never lost its connection gets.
      const whole = await readEvents(await ctx.server.request(`/runs/${run.run_id}/stream`));
      expect(followed.events.map((e) => e.data)).toEqual(whole.map((e) => e.data));
      // The cut came mid-run, and the source saw it (an error without a status) before it went on.
      expect(atCut).toBeLessThan(whole.length - 5);
      expect(followed.errors[0]!.code).toBeUndefined();
      // Three requests: the first, the one after the cut (resumed with Last-Event-ID), and the one after the end,
      // answered 204: an EventSource does not reconnect after that.
      expect(followed.errors.at(-1)).toMatchObject({ code: 204 });
      expect(proxy.requests()).toBe(3);
      await new Promise((resolve) => setTimeout(resolve, SSE_RETRY_MS + 500));
      expect(proxy.requests()).toBe(3);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('opens every stream with a retry hint, and answers 204 to a re-attach after the last event', async () => {
    ctx.model.reply(['a', 'b']);
    const done = await readEvents(
      await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message: 'short' } }),
    );
    const runId = (done[0]!.data as { run_id: string }).run_id;
    const last = done.at(-1)!.id;

    const raw = await ctx.server.request(`/runs/${runId}/stream`);
    expect(raw.status).toBe(200);
    expect(raw.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(raw.headers.get('x-accel-buffering')).toBe('no');
    expect((await raw.text()).startsWith(`retry: ${SSE_RETRY_MS}\n`)).toBe(true);

    for (const init of [{ headers: { 'last-event-id': String(last) } }, {}]) {
      const path = `/runs/${runId}/stream${'headers' in init ? '' : `?last_event_id=${last}`}`;
      const over = await ctx.server.request(path, init);
      expect(over.status).toBe(204);
      expect(await over.text()).toBe('');
    }
    const rest = await readEvents(
      await ctx.server.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(last - 1) } }),
    );
    expect(rest.map((e) => e.id)).toEqual([last]);
    // The header wins over the query: an EventSource opened with ?last_event_id= sends the header when it
    // reconnects, and resumes after what it has seen since, not after the address's id.
    const both = await readEvents(
      await ctx.server.request(`/runs/${runId}/stream?last_event_id=1`, {
        headers: { 'last-event-id': String(last - 2) },
      }),
    );
    expect(both.map((e) => e.id)).toEqual([last - 1, last]);
  });

  it('answers 204 for a run that ended, once what it stored is read, even with its final event pruned', async () => {
    ctx.model.reply(['x']);
    const done = await readEvents(
      await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message: 'pruned' } }),
    );
    const runId = (done[0]!.data as { run_id: string }).run_id;
    // A run's end is stored with its status: once its row says it ended, what the store has is all there will be.
    await ctx.server.pool.query(`DELETE FROM svc_run_events WHERE run_id = $1 AND type = 'run_done'`, [runId]);
    const other = await ctx.start();
    try {
      const lastKept = done.at(-2)!.id;
      expect((await other.request(`/runs/${runId}/stream?last_event_id=${lastKept}`)).status).toBe(204);
      // Behind what is kept, a client gets the rest, and its stream ends there.
      const rest = await readEvents(await other.request(`/runs/${runId}/stream?last_event_id=${lastKept - 1}`));
      expect(rest.map((e) => e.id)).toEqual([lastKept]);
      await ctx.server.pool.query(`DELETE FROM svc_run_events WHERE run_id = $1`, [runId]);
      expect((await other.request(`/runs/${runId}/stream`)).status).toBe(204);
    } finally {
      await other.close();
    }
  });

  it('answers 204 to a re-attach after gate_waiting until the gate is decided, then the resumed run', async () => {
    const gated = await readEvents(
      await ctx.server.request('/graphs/review/run', { method: 'POST', json: { message: 'to the gate' } }),
    );
    const { run_id: runId, thread_id: threadId } = gated[0]!.data as { run_id: string; thread_id: string };
    const gateId = gated.at(-1)!.id;
    expect(gated.at(-1)!.data.type).toBe('gate_waiting');
    expect((await ctx.server.request(`/runs/${runId}/stream?last_event_id=${gateId}`)).status).toBe(204);

    const accepted = await ctx.server.request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: {} });
    expect(accepted.status).toBe(202);
    const { stream_url } = (await accepted.json()) as { stream_url: string };
    const resumed = follow(`${ctx.server.url}${stream_url}`);
    await closed(resumed);
    expect(resumed.events[0]).toMatchObject({ id: gateId + 1, data: { type: 'gate_approved' } });
    expect(resumed.events.at(-1)!.data.type).toBe('run_done');
    expect(resumed.errors.at(-1)).toMatchObject({ code: 204 });
  }, 60_000);
});

describe('decisions as generated clients see them', () => {
  it('declares no POST whose answer is only or first an event stream, so no generated SSE client sends one again', async () => {
    const document = (await (await ctx.server.request('/openapi.json')).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
    };
    const streamOnly: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (method !== 'post') continue;
        for (const [status, response] of Object.entries(operation.responses)) {
          const types = Object.keys(response.content ?? {});
          // Generators take the JSON media type when there is one, or the first: it must be JSON.
          if (types.includes('text/event-stream') && types[0] !== 'application/json') {
            streamOnly.push(`${status} of POST ${path}`);
          }
        }
      }
    }
    expect(streamOnly).toEqual([]);
  });

  it('answers a decision refused with 409 in JSON, and a second decision never resumes the run twice', async () => {
    ctx.model.reply(['fine']);
    const gated = await readEvents(
      await ctx.server.request('/graphs/review/run', { method: 'POST', json: { message: 'decide twice' } }),
    );
    const { run_id: runId, thread_id: threadId } = gated[0]!.data as { run_id: string; thread_id: string };
    const approve = () =>
      ctx.server.request(`/threads/${threadId}/gates/gate/approve`, {
        method: 'POST',
        json: {},
        headers: { accept: 'text/event-stream' },
      });
    expect((await approve()).status).toBe(202);
    const again = await approve();
    expect(again.status).toBe(409);
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await again.json()).error.code).toBe('conflict');
    // Followed from the start right after the decision, the stream goes past the gate it was resumed from.
    const events = await readEvents(await ctx.server.request(`/runs/${runId}/stream`));
    expect(events.filter((e) => e.data.type === 'gate_approved')).toHaveLength(1);
    expect(events.at(-1)!.data.type).toBe('run_done');
  });
});

describe('a cancel as generated clients see it', () => {
  it('answers JSON with where to follow the run to its run_cancelled', async () => {
    ctx.model.reply(numberedTokens(200, 'c'), 20);
    const run = await startRun(ctx.server, 'summary', 'cancel me');
    // Cancelled while its tokens stream: read until the first one.
    await readEvents(await ctx.server.request(`/runs/${run.run_id}/stream`), (e) => e.data.type === 'token');
    const res = await ctx.server.request(`/runs/${run.run_id}/cancel`, { method: 'POST', json: { reason: 'enough' } });
    expect(res.status).toBe(200);
    const accepted = (await res.json()) as { status: string; last_event_id: number; stream_url: string };
    expect(accepted).toMatchObject({ run_id: run.run_id, thread_id: run.thread_id, status: 'cancelled' });
    expect(accepted.last_event_id).toBeGreaterThan(0);
    expect(accepted.stream_url).toBe(`/runs/${run.run_id}/stream?last_event_id=${accepted.last_event_id}`);
    const rest = await readEvents(await ctx.server.request(accepted.stream_url));
    // What came after the answer, in order; run_cancelled, stored with the cancel, comes after every id the run's
    // process had reserved (docs/run-lifecycle.md#cancellation), so its id may leap.
    const ids = rest.map((e) => e.id);
    expect(ids[0]).toBeGreaterThan(accepted.last_event_id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(rest.at(-1)!.data).toEqual({ type: 'run_cancelled', run_id: run.run_id, reason: 'enough' });
  });
});

describe('an EventSource with authentication on', () => {
  it('follows a run through a stream token, which opens only that run, for that user, before it expires', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET });
    try {
      const alice = await addUser(server.pool, 'alice', [['org', DEFAULT_ORG_ID, 'member']]);
      const bob = await addUser(server.pool, 'bob', [['org', DEFAULT_ORG_ID, 'member']]);
      const outsider = await addUser(server.pool, 'outsider');
      const as = async (user: string) => ({ authorization: `Bearer ${await signSession(user, SECRET)}` });

      ctx.model.reply(numberedTokens(10, 't'), 20);
      const run = await startRun(server, 'summary', 'with auth', { headers: await as(alice) });
      const other = await startRun(server, 'summary', 'another run', { headers: await as(alice) });

      // Without a credential a browser's EventSource is refused, and stops.
      const refused = follow(`${server.url}/runs/${run.run_id}/stream`);
      await closed(refused);
      expect(refused.errors.at(-1)).toMatchObject({ code: 401 });

      const minted = await server.request(`/runs/${run.run_id}/stream-token`, {
        method: 'POST',
        headers: await as(alice),
      });
      expect(minted.status).toBe(200);
      expect(minted.headers.get('cache-control')).toBe('no-store');
      const { token, stream_url, expires_at } = (await minted.json()) as {
        token: string;
        stream_url: string;
        expires_at: string;
      };
      expect(stream_url).toBe(`/runs/${run.run_id}/stream?access_token=${encodeURIComponent(token)}`);
      expect(Date.parse(expires_at) - Date.now()).toBeLessThanOrEqual(15 * 60 * 1000);

      const followed = follow(`${server.url}${stream_url}`);
      await closed(followed);
      expect(followed.events[0]!.data).toMatchObject({ type: 'run_start', run_id: run.run_id });
      expect(followed.events.at(-1)!.data.type).toBe('run_done');
      expect(followed.errors.at(-1)).toMatchObject({ code: 204 });

      const refusedWith = async (path: string, headers: Record<string, string> = {}) => {
        const res = await fetch(`${server.url}${path}`, { headers });
        expect(res.status).toBe(401);
        return ((await res.json()) as { error: { message: string } }).error.message;
      };
      // Another run.
      expect(await refusedWith(`/runs/${other.run_id}/stream?access_token=${token}`)).toBe(
        'this stream token is for another run',
      );
      // A request with an Authorization header is its bearer's, whatever the query holds (a generated client sends
      // its token both ways): bob, who may read the run, follows it as himself; an outsider with alice's token
      // beside his own session is still an outsider; a header that does not verify is not made good by the token.
      const asBob = await fetch(`${server.url}/runs/${run.run_id}/stream?access_token=${token}`, {
        headers: await as(bob),
      });
      expect((await readEvents(asBob)).at(-1)!.data).toMatchObject({ type: 'run_done', run_id: run.run_id });
      const asOutsider = await fetch(`${server.url}/runs/${run.run_id}/stream?access_token=${token}`, {
        headers: await as(outsider),
      });
      expect(asOutsider.status).toBe(404);
      await asOutsider.body?.cancel();
      expect(
        await refusedWith(`/runs/${run.run_id}/stream?access_token=${token}`, { authorization: 'Bearer not-a-token' }),
      ).toBe('invalid or expired token');
      // Not a session: the token opens nothing but the stream.
      expect(await refusedWith(`/runs/${run.run_id}`, { authorization: `Bearer ${token}` })).toBe(
        'invalid or expired token',
      );
      // After its expiry.
      const expired = await new SignJWT({ run: run.run_id, kind: 'session', name: 'alice' })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(alice)
        .setIssuer(STREAM_ISSUER)
        .setAudience(STREAM_AUDIENCE)
        .setIssuedAt(Math.floor(Date.now() / 1000) - 3600)
        .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
        .sign(new TextEncoder().encode(SECRET));
      expect(await refusedWith(`/runs/${run.run_id}/stream?access_token=${expired}`)).toBe(
        'invalid or expired stream token',
      );
      // Someone who may not read the run gets no token for it.
      const outsiders = await server.request(`/runs/${run.run_id}/stream-token`, {
        method: 'POST',
        headers: await as(outsider),
      });
      expect(outsiders.status).toBe(404);
      // The instance administrator (the API token) gets one too.
      const admins = await server.request(`/runs/${other.run_id}/stream-token`, { method: 'POST' });
      const adminStream = await fetch(`${server.url}${((await admins.json()) as { stream_url: string }).stream_url}`);
      expect((await readEvents(adminStream)).at(-1)!.data).toMatchObject({ type: 'run_done', run_id: other.run_id });
      // The token never reaches the log.
      expect(server.logs.filter((line) => line.includes(token))).toEqual([]);
    } finally {
      await server.close();
    }
  }, 60_000);
});
