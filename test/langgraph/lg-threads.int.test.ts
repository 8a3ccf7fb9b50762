import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';

/**
 * The LangGraph API's assistants and threads (docs/langgraph-api.md), through LangChain's own SDK against the real
 * server and PostgreSQL: what Agent Chat UI and Agent Inbox call before any run, the key in X-Api-Key, and tenancy.
 */
const SECRET = 'a-session-secret-for-the-langgraph-tests-01';
const API_TOKEN = 'langgraph-test-admin-token-0123456789';
/** Where a browser app such as Agent Chat UI is served from. */
const APP_ORIGIN = 'http://localhost:3000';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let admin: Client;

beforeAll(async () => {
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    CORS_ORIGINS: APP_ORIGIN,
  });
  admin = new Client({ apiUrl: `${server.url}/lg`, apiKey: API_TOKEN });
});
afterAll(() => server?.close());

/** The text of a thread's first message, as Agent Chat UI lists it. */
const firstText = (values: unknown) => (values as { messages?: { content: string }[] }).messages?.[0]?.content;

describe('assistants', () => {
  it('lists every agent and command as an assistant, found by graph id or assistant id', async () => {
    const all = await admin.assistants.search({ limit: 100 });
    expect(all.map((a) => a.graph_id).sort()).toEqual(['review', 'summary']);
    const review = all.find((a) => a.graph_id === 'review')!;
    // LangGraph's own derivation of a graph's default assistant (uuid5 of the graph id): the same id everywhere.
    expect(review.assistant_id).toBe('80c5c4d8-dc67-5ab3-8734-c1e23e87e5ad');
    expect(await admin.assistants.get(review.assistant_id)).toEqual(review);
    expect(await admin.assistants.get('review')).toEqual(review);
    const graph = await admin.assistants.getGraph('review');
    expect(graph.nodes.map((n) => n.id)).toEqual([
      '__start__',
      'intake',
      'analysis',
      'gate',
      'output',
      'cancelled',
      '__end__',
    ]);
    await expect(admin.assistants.get('nobody')).rejects.toThrow(/404/);
  });

  it('answers /info without a key, and nothing else', async () => {
    expect((await fetch(`${server.url}/lg/info`)).status).toBe(200);
    const anonymous = new Client({ apiUrl: `${server.url}/lg`, apiKey: null as unknown as string });
    await expect(anonymous.threads.search()).rejects.toThrow(/401/);
    // The key is also taken as a bearer token, as on the rest of the API.
    const res = await fetch(`${server.url}/lg/assistants/review`, {
      headers: { authorization: `Bearer ${API_TOKEN}` },
    });
    expect(res.status).toBe(200);
  });
});

describe('a browser app on another origin', () => {
  it('may send the key and Last-Event-ID, and read the headers the SDK resumes and pages with', async () => {
    const preflight = await fetch(`${server.url}/lg/threads/search`, {
      method: 'OPTIONS',
      headers: {
        origin: APP_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-api-key, content-type, last-event-id',
      },
    });
    expect(preflight.status).toBe(204);
    const allowed = preflight.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const header of ['x-api-key', 'content-type', 'last-event-id']) expect(allowed).toContain(header);
    const res = await fetch(`${server.url}/lg/threads/search`, {
      method: 'POST',
      headers: { origin: APP_ORIGIN, 'x-api-key': API_TOKEN, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    const exposed = res.headers.get('access-control-expose-headers')!;
    for (const header of ['Content-Location', 'Location', 'X-Pagination-Total']) expect(exposed).toContain(header);
  });
});

describe('threads', () => {
  it('creates a thread with no agent, finds it by metadata, patches and deletes it', async () => {
    const thread = await admin.threads.create({ metadata: { owner: 'ann', topic: 'drafts' } });
    expect(thread).toMatchObject({ status: 'idle', values: {}, interrupts: {}, metadata: { owner: 'ann' } });
    expect(await admin.threads.get(thread.thread_id)).toEqual(thread);

    const found = await admin.threads.search({ metadata: { topic: 'drafts' } });
    expect(found.map((t) => t.thread_id)).toEqual([thread.thread_id]);
    expect(await admin.threads.search({ metadata: { topic: 'other' } })).toEqual([]);

    const patched = await admin.threads.update(thread.thread_id, { metadata: { topic: 'patched' } });
    expect(patched.metadata).toEqual({ owner: 'ann', topic: 'patched' });
    expect((await admin.threads.getState(thread.thread_id)).values).toEqual({});
    expect(await admin.threads.getHistory(thread.thread_id)).toEqual([]);

    await admin.threads.delete(thread.thread_id);
    await expect(admin.threads.get(thread.thread_id)).rejects.toThrow(/404/);
  });

  it("a thread's first run names its agent: then it is searched by graph id, assistant id and status", async () => {
    ctx.model.reply(['A short summary.']);
    const thread = await admin.threads.create({ metadata: { topic: 'first-run' } });
    const result = await admin.runs.wait(thread.thread_id, 'summary', {
      input: { messages: [{ type: 'human', content: [{ type: 'text', text: 'Summarise the repo' }] }] },
    });
    expect(firstText(result)).toBe('Summarise the repo');

    const byGraph = await admin.threads.search({ metadata: { graph_id: 'summary', topic: 'first-run' } });
    expect(byGraph.map((t) => t.thread_id)).toEqual([thread.thread_id]);
    const summary = await admin.assistants.get('summary');
    const byAssistant = await admin.threads.search({ metadata: { assistant_id: summary.assistant_id } });
    expect(byAssistant.map((t) => t.thread_id)).toContain(thread.thread_id);
    expect(byAssistant[0]!.metadata).toMatchObject({ graph_id: 'summary', assistant_id: summary.assistant_id });
    expect(firstText(byAssistant.find((t) => t.thread_id === thread.thread_id)!.values)).toBe('Summarise the repo');

    const idle = await admin.threads.search({ status: 'idle', metadata: { topic: 'first-run' } });
    expect(idle).toHaveLength(1);
    expect(await admin.threads.search({ status: 'interrupted', metadata: { topic: 'first-run' } })).toEqual([]);

    // The thread keeps its agent: a run of another one is refused.
    await expect(
      admin.runs.create(thread.thread_id, 'review', { input: { messages: [{ type: 'human', content: 'x' }] } }),
    ).rejects.toThrow(/409/);
  });

  it('counts what a search finds, by graph id, assistant id (or name), status and metadata alike', async () => {
    for (const [agent, message] of [
      ['summary', 'count me'],
      ['summary', 'count me too'],
      ['review', 'count me at the gate'],
    ] as const) {
      ctx.model.reply(['Counted.']);
      const thread = await admin.threads.create({ metadata: { counted: 'yes' } });
      await admin.runs.wait(thread.thread_id, agent, { input: { message } });
    }
    await admin.threads.create({ metadata: { counted: 'yes' } });
    const summary = await admin.assistants.get('summary');
    const review = await admin.assistants.get('review');
    const filters = [
      { metadata: { counted: 'yes' } },
      { metadata: { counted: 'yes', assistant_id: summary.assistant_id } },
      { metadata: { counted: 'yes', assistant_id: review.assistant_id } },
      { metadata: { counted: 'yes', assistant_id: 'summary' } },
      { metadata: { counted: 'yes', assistant_id: 'no-such-assistant' } },
      { metadata: { counted: 'yes', graph_id: 'summary' } },
      { metadata: { counted: 'yes' }, status: 'interrupted' as const },
      { metadata: { counted: 'yes', assistant_id: summary.assistant_id }, status: 'idle' as const },
    ];
    const counts = [];
    for (const filter of filters) {
      const found = await admin.threads.search({ ...filter, limit: 100 });
      expect(await admin.threads.count(filter), JSON.stringify(filter)).toBe(found.length);
      counts.push(found.length);
    }
    expect(counts).toEqual([4, 2, 1, 2, 0, 2, 1, 2]);
  });

  it('the thread appears in the native API once it has its agent, with its id', async () => {
    ctx.model.reply(['Done.']);
    const thread = await admin.threads.create();
    await admin.runs.wait(thread.thread_id, 'summary', { input: { message: 'hello' } });
    const native = await server.request(`/threads/${thread.thread_id}`);
    expect(native.status).toBe(200);
    expect(await native.json()).toMatchObject({ agent: 'summary', name: 'hello' });
  });
});

describe('another organisation', () => {
  it('sees none of it: search is empty, every thread and run answers 404', async () => {
    ctx.model.reply(['Secret summary.']);
    const thread = await admin.threads.create({ metadata: { topic: 'secret' } });
    await admin.runs.wait(thread.thread_id, 'summary', { input: { message: 'the secret plan' } });
    const [run] = await admin.runs.list(thread.thread_id);

    const orgRes = await server.request('/orgs', { method: 'POST', json: { name: 'Elsewhere' } });
    const org = ((await orgRes.json()) as { id: string }).id;
    const outsider = await signSession(await addUser(server.pool, 'eve', [['org', org, 'admin']]), SECRET);
    const eve = new Client({ apiUrl: `${server.url}/lg`, apiKey: outsider });

    expect(await eve.threads.search({ metadata: { topic: 'secret' } })).toEqual([]);
    expect(await eve.threads.search({ limit: 100 })).toEqual([]);
    await expect(eve.threads.get(thread.thread_id)).rejects.toThrow(/404/);
    await expect(eve.threads.getState(thread.thread_id)).rejects.toThrow(/404/);
    await expect(eve.threads.getHistory(thread.thread_id)).rejects.toThrow(/404/);
    await expect(eve.runs.get(thread.thread_id, run!.run_id)).rejects.toThrow(/404/);
    await expect(eve.runs.join(thread.thread_id, run!.run_id)).rejects.toThrow(/404/);
    await expect(eve.threads.update(thread.thread_id, { metadata: { x: 1 } })).rejects.toThrow(/404/);
    await expect(eve.threads.delete(thread.thread_id)).rejects.toThrow(/404/);
    await expect(eve.runs.create(thread.thread_id, 'summary', { input: { message: 'let me in' } })).rejects.toThrow(
      /404/,
    );
    expect((await admin.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
  });

  it('learns nothing from creating a thread under its id: not found, as every route answers it, never "exists"', async () => {
    const thread = await admin.threads.create({ metadata: { topic: 'taken' } });
    const draft = await admin.threads.create({ metadata: { topic: 'taken, no run yet' } });
    ctx.model.reply(['Taken.']);
    await admin.runs.wait(thread.thread_id, 'summary', { input: { message: 'a thread of its own' } });
    // An organisation with a project of its own, where mallory may create threads.
    const made = async (path: string, json: object) =>
      ((await (await server.request(path, { method: 'POST', json })).json()) as { id: string }).id;
    const org = await made('/orgs', { name: 'Elsewhere too' });
    const team = await made('/teams', { name: 'Their team', parent_id: org });
    await made('/projects', { name: 'Their project', parent_id: team });
    const outsider = await signSession(await addUser(server.pool, 'mallory', [['org', org, 'admin']]), SECRET);

    // What mallory gets for an id nobody has, for comparison: a GET of it.
    const answer = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}/lg${path}`, {
        method,
        headers: { 'x-api-key': outsider, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } };
    };
    for (const id of [thread.thread_id, draft.thread_id]) {
      const notFound = { status: 404, body: { error: { code: 'not_found', message: `thread ${id} not found` } } };
      expect(await answer('GET', `/threads/${id}`)).toEqual(notFound);
      for (const ifExists of [undefined, 'raise', 'do_nothing']) {
        expect(await answer('POST', '/threads', { thread_id: id, if_exists: ifExists })).toEqual(notFound);
      }
      expect(
        await answer('POST', `/threads/${id}/runs`, {
          assistant_id: 'summary',
          input: { message: 'let me in' },
          if_not_exists: 'create',
        }),
      ).toEqual(notFound);
    }
    // Nothing of mallory's was made, and the owner's threads are as they were; a free id is hers to take.
    const mallory = new Client({ apiUrl: `${server.url}/lg`, apiKey: outsider });
    expect(await mallory.threads.search({ limit: 100 })).toEqual([]);
    const free = crypto.randomUUID();
    expect((await mallory.threads.create({ threadId: free })).thread_id).toBe(free);
    expect((await admin.threads.get(thread.thread_id)).metadata).toMatchObject({ topic: 'taken' });
    expect((await admin.threads.get(draft.thread_id)).metadata).toEqual({ topic: 'taken, no run yet' });
    // The caller's own thread keeps the SDK's if_exists: raise is a conflict, do_nothing the thread as it is.
    await expect(admin.threads.create({ threadId: thread.thread_id })).rejects.toThrow(/409/);
    await expect(admin.threads.create({ threadId: thread.thread_id, ifExists: 'raise' })).rejects.toThrow(/409/);
    expect((await admin.threads.create({ threadId: thread.thread_id, ifExists: 'do_nothing' })).thread_id).toBe(
      thread.thread_id,
    );
  });
});
