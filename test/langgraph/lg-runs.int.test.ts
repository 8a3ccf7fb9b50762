import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Client } from '@langchain/langgraph-sdk';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { until } from '../helpers/until';
import { type LgMessage as Message, type Part, collect } from './lg-stream-parts';

/**
 * Runs through the LangGraph API (docs/langgraph-api.md), with LangChain's own SDK against the real server and
 * PostgreSQL: the stream in each mode, message ids that agree across chunks, values and history, a cut connection
 * the SDK resumes by itself, join, wait, errors and cancel.
 */
const API_TOKEN = 'langgraph-runs-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let client: Client;

beforeAll(async () => {
  server = await ctx.start({ AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN });
  client = new Client({ apiUrl: `${server.url}/lg`, apiKey: API_TOKEN });
});
afterAll(() => server?.close());

const messagesOf = (values: unknown) => (values as { messages: Message[] }).messages;

/** The text each message id received in `messages` chunks, in order. */
function chunkTexts(parts: Part[]): Map<string, string> {
  const texts = new Map<string, string>();
  for (const part of parts.filter((p) => p.event === 'messages')) {
    const [chunk] = part.data as [Message, Record<string, unknown>];
    texts.set(chunk.id, (texts.get(chunk.id) ?? '') + chunk.content);
  }
  return texts;
}

describe('a streamed run', () => {
  it('streams metadata, values, updates, message tuples and custom events, under ids that agree with the history', async () => {
    ctx.model.reply(['Short ', 'answer.']);
    const thread = await client.threads.create();
    const parts = await collect(
      client.runs.stream(thread.thread_id, 'summary', {
        input: { messages: [{ type: 'human', content: 'Summarise the repository' }] },
        streamMode: ['values', 'updates', 'messages-tuple', 'custom'],
      }),
    );
    expect(parts[0]!.event).toBe('metadata');
    const { run_id: runId } = parts[0]!.data as { run_id: string };
    expect(new Set(parts.map((p) => p.event))).toEqual(
      new Set(['metadata', 'values', 'updates', 'messages', 'custom']),
    );
    // Every event but the opening metadata has an id to resume after, each after the one before.
    const ids = parts.slice(1).map((p) => p.id!);
    expect(ids.every((id) => /^\d+-\d+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);

    const final = parts.filter((p) => p.event === 'values').at(-1)!.data;
    const messages = messagesOf(final);
    expect(messages.map((m) => [m.type, m.name ?? null, m.content])).toEqual([
      ['human', null, 'Summarise the repository'],
      ['ai', 'dispatch', 'Short answer.'],
      ['ai', 'execute', 'Short answer.'],
      ['ai', 'summarize', 'Short answer.'],
    ]);
    // Chunks build exactly the messages the values hold, under the same ids.
    const texts = chunkTexts(parts);
    expect([...texts.keys()]).toEqual(messages.filter((m) => m.type === 'ai').map((m) => m.id));
    for (const m of messages.filter((m) => m.type === 'ai')) expect(texts.get(m.id)).toBe(m.content);
    const [, metadata] = parts.find((p) => p.event === 'messages')!.data as [Message, Record<string, unknown>];
    expect(metadata).toMatchObject({ langgraph_node: 'dispatch', run_id: runId, thread_id: thread.thread_id });

    expect(parts.find((p) => p.event === 'updates')!.data).toEqual({
      dispatch: { messages: [messages[1]], outputs: { dispatch: 'Short answer.' } },
    });
    const custom = parts.filter((p) => p.event === 'custom').map((p) => (p.data as { type: string }).type);
    expect(custom[0]).toBe('run_start');
    expect(custom).toContain('node_enter');
    expect(custom.at(-1)).toBe('run_done');

    // A replay of the stored run is the live stream, event for event.
    const replay = await collect(
      client.runs.joinStream(thread.thread_id, runId, {
        lastEventId: '-1',
        streamMode: ['values', 'updates', 'messages-tuple', 'custom'],
      }),
    );
    expect(replay).toEqual(parts);

    // The thread's state and history show the same messages under the same ids.
    const state = await client.threads.getState(thread.thread_id);
    expect(messagesOf(state.values)).toEqual(messages);
    const history = await client.threads.getHistory(thread.thread_id, { limit: 50 });
    expect(messagesOf(history[0]!.values)).toEqual(messages);
    expect(history[0]!.checkpoint.checkpoint_id).toBe(state.checkpoint.checkpoint_id);
    expect(history[0]!.parent_checkpoint?.checkpoint_id).toBe(history[1]!.checkpoint.checkpoint_id);
    const afterDispatch = history.find((h) => h.metadata?.writes && 'dispatch' in (h.metadata.writes as object))!;
    expect(messagesOf(afterDispatch.values)).toEqual(messages.slice(0, 2));
    expect(await client.threads.getState(thread.thread_id, afterDispatch.checkpoint.checkpoint_id!)).toEqual(
      afterDispatch,
    );
    expect((await client.threads.get(thread.thread_id)).status).toBe('idle');
    expect(await client.runs.get(thread.thread_id, runId)).toMatchObject({ status: 'success' });

    // A second run adds to the thread's messages; the first run's keep their ids.
    ctx.model.reply(['Again.']);
    const second = await client.runs.wait(thread.thread_id, 'summary', { input: { message: 'Once more' } });
    expect(messagesOf(second).slice(0, 4)).toEqual(messages);
    expect(messagesOf(second)[4]).toMatchObject({ type: 'human', content: 'Once more' });
  });

  it("keeps an earlier run's messages in the order its phases ran, whatever times their rows were given", async () => {
    ctx.model.reply(['First.']);
    const thread = await client.threads.create();
    const first = await client.runs.wait(thread.thread_id, 'summary', { input: { message: 'One' } });
    const before = messagesOf(first).map((m) => m.name ?? m.type);
    expect(before).toEqual(['human', 'dispatch', 'execute', 'summarize']);
    // Rows written in one batch under load may carry times a moment out of order: the last phase looks first here.
    const { rows } = await server.pool.query<{ id: string }>('SELECT id FROM svc_runs WHERE thread_id = $1', [
      thread.thread_id,
    ]);
    await server.pool.query(
      `UPDATE svc_run_nodes SET entered_at = entered_at - 10 WHERE run_id = $1 AND node_id = 'summarize'`,
      [rows[0]!.id],
    );
    ctx.model.reply(['Second.']);
    const second = await client.runs.wait(thread.thread_id, 'summary', { input: { message: 'Two' } });
    expect(
      messagesOf(second)
        .map((m) => m.name ?? m.type)
        .slice(0, 5),
    ).toEqual([...before, 'human']);
  });

  it('a cut connection is resumed by the SDK itself, after the last event it had, with nothing lost or repeated', async () => {
    const tokens = numberedTokens(60, 't');
    ctx.model.reply(tokens, 15);
    // A proxy that cuts the first stream once some of it has passed: the SDK reconnects to Location.
    let cut = false;
    let streams = 0;
    const proxy = net.createServer((downstream) => {
      const upstream = net.connect(Number(new URL(server.url).port), '127.0.0.1');
      downstream.pipe(upstream);
      // Connections are kept alive: a stream's answer may follow other answers on the same connection.
      let passed = 0;
      let isStream = false;
      upstream.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        if (text.startsWith('HTTP/1.1') && text.includes('text/event-stream')) {
          isStream = ++streams === 1;
          passed = 0;
        }
        passed += chunk.length;
        downstream.write(chunk);
        if (isStream && !cut && passed > 3000) {
          cut = true;
          downstream.destroy();
          upstream.destroy();
        }
      });
      upstream.on('end', () => downstream.end());
      upstream.on('error', () => downstream.destroy());
      downstream.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const viaProxy = new Client({
        apiUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/lg`,
        apiKey: API_TOKEN,
      });
      const thread = await viaProxy.threads.create();
      const parts = await collect(
        viaProxy.runs.stream(thread.thread_id, 'summary', {
          input: { message: 'A long one' },
          streamMode: ['messages-tuple', 'values'],
        }),
      );
      expect(cut).toBe(true);
      expect(streams).toBeGreaterThanOrEqual(2);
      const ids = parts.filter((p) => p.id).map((p) => p.id!);
      expect(new Set(ids).size).toBe(ids.length);
      const texts = chunkTexts(parts);
      expect([...texts.values()]).toEqual([tokens.join(''), tokens.join(''), tokens.join('')]);
      const final = messagesOf(parts.filter((p) => p.event === 'values').at(-1)!.data);
      expect(final.map((m) => m.content)).toEqual(['A long one', ...Array(3).fill(tokens.join(''))]);
    } finally {
      proxy.close();
    }
  });
});

describe('a browser\u2019s EventSource on a run\u2019s stream', () => {
  /** A WHATWG EventSource (reconnecting by its own rules) on a run's stream, with the requests it makes counted. */
  function follow(threadId: string, runId: string) {
    let requests = 0;
    const events: string[] = [];
    const statuses: number[] = [];
    const source = new EventSource(`${server.url}/lg/threads/${threadId}/runs/${runId}/stream`, {
      // Its key as these clients send it; the reconnecting is the EventSource's own.
      fetch: (input, init) => {
        requests += 1;
        return fetch(input, { ...init, headers: { ...init.headers, 'x-api-key': API_TOKEN } });
      },
    });
    for (const name of ['metadata', 'values']) source.addEventListener(name, () => events.push(name));
    source.addEventListener('error', (error) => error.code && statuses.push(error.code));
    return { source, events, statuses, requests: () => requests };
  }

  it('stops, after the end of a finished run or the stop of an interrupted one: a re-attach is answered 204', async () => {
    ctx.model.reply(['Done.']);
    const finished = await client.threads.create();
    const done = await client.runs.create(finished.thread_id, 'summary', { input: { message: 'to the end' } });
    await client.runs.join(finished.thread_id, done.run_id);
    const interrupted = await client.threads.create();
    const stopped = await client.runs.create(interrupted.thread_id, 'review', { input: { message: 'to the gate' } });
    expect(await client.runs.join(interrupted.thread_id, stopped.run_id)).toHaveProperty('__interrupt__');

    const sources = [follow(finished.thread_id, done.run_id), follow(interrupted.thread_id, stopped.run_id)];
    try {
      // The whole stream, then one reconnect after the default 3 s with Last-Event-ID, answered 204: closed for good.
      await until(async () => sources.every((s) => s.source.readyState === EventSource.CLOSED) || undefined, 15_000);
      await new Promise((resolve) => setTimeout(resolve, 4000));
      for (const followed of sources) {
        expect(followed.events[0]).toBe('metadata');
        expect(followed.events.filter((e) => e === 'metadata')).toHaveLength(1);
        expect(followed.statuses).toEqual([204]);
        expect(followed.requests()).toBe(2);
      }
    } finally {
      for (const followed of sources) followed.source.close();
    }

    // What the EventSource met: the native stream's answer to a client that has the last event.
    const whole = await collect(client.runs.joinStream(finished.thread_id, done.run_id, { lastEventId: '-1' }));
    const over = await fetch(`${server.url}/lg/threads/${finished.thread_id}/runs/${done.run_id}/stream`, {
      headers: { 'x-api-key': API_TOKEN, 'last-event-id': whole.at(-1)!.id! },
    });
    expect(over.status).toBe(204);
    // Another mode of the same last event is still there to get.
    const custom = await fetch(
      `${server.url}/lg/threads/${finished.thread_id}/runs/${done.run_id}/stream?stream_mode=custom&stream_mode=values`,
      { headers: { 'x-api-key': API_TOKEN, 'last-event-id': whole.at(-1)!.id!.replace(/-\d+$/, '-0') } },
    );
    expect(custom.status).toBe(200);
    expect(await custom.text()).toContain('event: values');
  }, 60_000);
});

describe('leaving a stream', () => {
  it('on_disconnect cancel: a client that leaves before the end cancels the run; by default it runs on', async () => {
    const leave = async (onDisconnect?: 'cancel') => {
      ctx.model.reply(numberedTokens(300), 10);
      const thread = await client.threads.create();
      const stop = new AbortController();
      let runId = '';
      // The SDK ends the iteration quietly when its signal aborts.
      try {
        for await (const part of client.runs.stream(thread.thread_id, 'summary', {
          input: { message: 'leave early' },
          streamMode: ['messages-tuple'],
          signal: stop.signal,
          ...(onDisconnect ? { onDisconnect } : {}),
        })) {
          if (part.event === 'metadata') runId = (part.data as { run_id: string }).run_id;
          if (part.event === 'messages') stop.abort();
        }
      } catch (error) {
        if (!stop.signal.aborted) throw error;
      }
      return { threadId: thread.thread_id, runId };
    };
    const cancelled = await leave('cancel');
    await until(async () =>
      (await client.runs.get(cancelled.threadId, cancelled.runId)).status === 'interrupted' ? true : undefined,
    );
    const kept = await leave();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await client.runs.get(kept.threadId, kept.runId)).status).toBe('running');
    await client.runs.cancel(kept.threadId, kept.runId, true);
  });

  it('answers the run as JSON instead of its stream when asked for JSON', async () => {
    ctx.model.reply(['As JSON.']);
    const thread = await client.threads.create();
    const res = await fetch(`${server.url}/lg/threads/${thread.thread_id}/runs/stream`, {
      method: 'POST',
      headers: { 'x-api-key': API_TOKEN, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ assistant_id: 'summary', input: { message: 'json please' } }),
    });
    expect(res.status).toBe(200);
    const run = (await res.json()) as { run_id: string; thread_id: string };
    expect(run.thread_id).toBe(thread.thread_id);
    expect(res.headers.get('content-location')).toBe(`/threads/${thread.thread_id}/runs/${run.run_id}`);
    await client.runs.join(thread.thread_id, run.run_id);
  });
});

describe('join, wait, errors and cancel', () => {
  it('a run created in the background is joined, and its stream joined from the start or after an event', async () => {
    ctx.model.reply(['Joined.'], 20);
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'summary', {
      input: { message: 'in the background' },
      streamMode: ['values', 'custom'],
    });
    expect(run).toMatchObject({ thread_id: thread.thread_id, status: 'running' });
    const values = await client.runs.join(thread.thread_id, run.run_id);
    expect(messagesOf(values).map((m) => m.content)).toEqual(['in the background', 'Joined.', 'Joined.', 'Joined.']);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
    expect((await client.runs.list(thread.thread_id)).map((r) => r.run_id)).toEqual([run.run_id]);

    // The stream again, in the modes the run was started with: whole from the start, then only what follows an id.
    const whole = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: '-1' }));
    expect(whole[0]!.event).toBe('metadata');
    expect(new Set(whole.slice(1).map((p) => p.event))).toEqual(new Set(['values', 'custom']));
    const middle = whole[Math.floor(whole.length / 2)]!.id!;
    const rest = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: middle }));
    // A resumed stream does not open with metadata again: the client has it.
    expect(rest.map((p) => p.id)).toEqual(whole.slice(whole.findIndex((p) => p.id === middle) + 1).map((p) => p.id));
  });

  it('a failed run ends its stream with an error event; its status is error, and wait answers __error__', async () => {
    ctx.model.fail(500, 'the model fell over');
    const thread = await client.threads.create();
    const parts = await collect(client.runs.stream(thread.thread_id, 'summary', { input: { message: 'fail' } }));
    const error = parts.at(-1)!;
    expect(error.event).toBe('error');
    expect(error.data).toMatchObject({ error: expect.any(String), message: expect.stringContaining('fell over') });
    const [run] = await client.runs.list(thread.thread_id);
    expect(run!.status).toBe('error');
    expect((await client.threads.get(thread.thread_id)).status).toBe('error');
    expect(await client.runs.join(thread.thread_id, run!.run_id)).toEqual({ __error__: error.data });
  });

  it('cancel stops a running run: it is interrupted, and the thread idle again', async () => {
    ctx.model.reply(numberedTokens(400), 20);
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'summary', { input: { message: 'long' } });
    await until(async () => ((await client.threads.get(thread.thread_id)).status === 'busy' ? true : undefined));
    await client.runs.cancel(thread.thread_id, run.run_id, true);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe('interrupted');
    expect((await client.threads.get(thread.thread_id)).status).toBe('idle');
    await expect(client.runs.cancel(thread.thread_id, run.run_id)).rejects.toThrow(/409/);
  });

  it('a busy thread refuses a second run (reject), or cancels the first (interrupt)', async () => {
    ctx.model.reply(numberedTokens(400), 20);
    const thread = await client.threads.create();
    const first = await client.runs.create(thread.thread_id, 'summary', { input: { message: 'first' } });
    await expect(client.runs.create(thread.thread_id, 'summary', { input: { message: 'second' } })).rejects.toThrow(
      /409/,
    );
    ctx.model.reply(['Quick.']);
    const second = await client.runs.wait(thread.thread_id, 'summary', {
      input: { message: 'second' },
      multitaskStrategy: 'interrupt',
    });
    expect(messagesOf(second).at(-1)!.content).toBe('Quick.');
    expect((await client.runs.get(thread.thread_id, first.run_id)).status).toBe('interrupted');
  });
});
