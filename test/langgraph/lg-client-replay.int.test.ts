import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPieces } from '../helpers/sse';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';

/**
 * The requests Agent Chat UI and Agent Inbox send, replayed byte for byte with plain fetch (as the apps' logs show
 * them, docs/langgraph-api.md), against the real server: each test asserts what the app reads from the answer, so
 * a change that would break one of these apps breaks here first, whatever the SDK's own typing tolerates.
 */
const API_TOKEN = 'langgraph-replay-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;

beforeAll(async () => {
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: 'a-session-secret-for-the-replay-tests-0',
    SVC_API_TOKEN: API_TOKEN,
  });
});
afterAll(() => server?.close());

interface Message {
  type: string;
  id: string;
  content: unknown;
}
interface Interrupt {
  id: string;
  value: {
    action_requests: { name: string; args: Record<string, string>; arguments: Record<string, string> }[];
    review_configs: { action_name: string; allowed_decisions: string[] }[];
    action_request: { action: string; args: Record<string, string> };
    config: Record<string, boolean>;
    description: string;
  };
}
interface Values {
  messages: Message[];
  __interrupt__?: Interrupt[];
}
interface Thread {
  thread_id: string;
  status: string;
  metadata: Record<string, unknown>;
  values: Values;
  interrupts: Record<string, Interrupt[]>;
}
interface Frame {
  event: string;
  data: unknown;
  id?: string;
}

/** A request as the SDK sends it from a browser: JSON body, the key in X-Api-Key (none for /info). */
async function send(method: string, path: string, body?: unknown, key: string | null = API_TOKEN): Promise<Response> {
  return fetch(`${server.url}/lg${path}`, {
    method,
    headers: { ...(key && { 'x-api-key': key }), ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function json<T>(res: Response, status = 200): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as T;
}

/** The frames of a LangGraph SSE answer, as the SDK's parser splits them (comments skipped). */
async function frames(res: Response): Promise<Frame[]> {
  expect(res.status, res.status === 200 ? '' : await res.clone().text()).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const out: Frame[] = [];
  await readPieces(res, '\n\n', (piece) => {
    const fields: Record<string, string> = {};
    for (const line of piece.split('\n')) {
      if (line.startsWith(':') || !line) continue;
      const colon = line.indexOf(':');
      fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
    }
    if (fields.event !== undefined)
      out.push({ event: fields.event, data: JSON.parse(fields.data ?? 'null'), id: fields.id });
    return false;
  });
  return out;
}

const lastValues = (fs: Frame[]) => fs.filter((f) => f.event === 'values').at(-1)!.data as Values;
/** Agent Chat UI's `getContentString`: a string, or the text of its text parts. */
const textOf = (content: unknown) =>
  typeof content === 'string'
    ? content
    : (content as { type: string; text?: string }[])
        .filter((c) => c.type === 'text')
        .map((c) => c.text)
        .join(' ');

/** Agent Chat UI's `isAgentInboxInterruptSchema` (lib/agent-inbox-interrupt.ts): what makes it show the HITL card. */
const chatUiShowsHitl = (value: unknown) => {
  const v = value as Interrupt['value'];
  return (
    Array.isArray(v?.action_requests) &&
    v.action_requests.every((a) => typeof a.name === 'string' && typeof a.args === 'object' && a.args !== null) &&
    Array.isArray(v.review_configs) &&
    v.review_configs.every((c) => typeof c.action_name === 'string' && Array.isArray(c.allowed_decisions))
  );
};

/** Agent Chat UI's first message in a new chat: a fresh thread, then the stream body it sends. */
async function chatUiFirstMessage(text: string) {
  const thread = await json<Thread>(await send('POST', '/threads', { metadata: {} }));
  ctx.model.reply([`Analysis of: ${text}`]);
  const res = await send('POST', `/threads/${thread.thread_id}/runs/stream`, {
    input: { messages: [{ id: crypto.randomUUID(), type: 'human', content: [{ type: 'text', text }] }] },
    stream_mode: ['values', 'messages-tuple', 'custom'],
    stream_subgraphs: true,
    stream_resumable: true,
    on_disconnect: 'continue',
    assistant_id: 'review',
  });
  const location = res.headers.get('location');
  const contentLocation = res.headers.get('content-location');
  return { threadId: thread.thread_id, frames: await frames(res), location, contentLocation };
}

/** A thread stopped at its gate, started the way Agent Chat UI starts one. */
async function interruptedThread(text: string) {
  const first = await chatUiFirstMessage(text);
  const interrupt = lastValues(first.frames).__interrupt__![0]!;
  return { ...first, interrupt };
}

describe('Agent Chat UI', () => {
  it('opens without a key, lists the agent’s threads, and streams a new chat to its gate with the HITL card', async () => {
    const info = await send('GET', '/info', undefined, null);
    expect(info.status).toBe(200);
    const before = await json<Thread[]>(
      await send('POST', '/threads/search', { metadata: { graph_id: 'review' }, limit: 100, offset: 0 }),
    );
    expect(Array.isArray(before)).toBe(true);

    const { threadId, frames: fs, location, contentLocation } = await chatUiFirstMessage('Review the login change');
    // The SDK reads the run from Content-Location, and resumes a cut stream only when Location is there.
    const runId = (fs[0]!.data as { run_id: string }).run_id;
    expect(fs[0]!.event).toBe('metadata');
    expect(contentLocation).toBe(`/threads/${threadId}/runs/${runId}`);
    expect(location).toBe(`/threads/${threadId}/runs/${runId}/stream`);
    expect(new Set(fs.map((f) => f.event))).toEqual(new Set(['metadata', 'values', 'messages', 'custom']));

    // Tokens arrive as message tuples under the id the values later carry: the chat shows one growing bubble.
    const tuples = fs.filter((f) => f.event === 'messages').map((f) => f.data as [Message & { type: string }, object]);
    expect(tuples.length).toBeGreaterThan(0);
    const streamed = tuples.map(([chunk]) => chunk);
    const analysisId = streamed.at(-1)!.id;
    expect(
      streamed
        .filter((c) => c.id === analysisId)
        .map((c) => c.content)
        .join(''),
    ).toBe('Analysis of: Review the login change');
    const values = lastValues(fs);
    expect(values.messages.map((m) => m.id)).toContain(analysisId);
    expect(textOf(values.messages[0]!.content)).toBe('Review the login change');
    expect(values.messages[0]!.type).toBe('human');

    const [interrupt] = values.__interrupt__!;
    expect(chatUiShowsHitl(interrupt!.value)).toBe(true);
    expect(interrupt!.value.action_requests[0]).toMatchObject({
      name: 'gate',
      args: { analysis: 'Analysis of: Review the login change' },
    });
    expect(interrupt!.value.review_configs[0]!.allowed_decisions).toEqual(
      expect.arrayContaining(['approve', 'edit', 'reject']),
    );

    // After the stream, useStream asks for the run and the history; a reload finds the interrupt in history[0].
    expect((await json<{ status: string }>(await send('GET', `/threads/${threadId}/runs/${runId}`))).status).toBe(
      'success',
    );
    const history = await json<{ tasks: { interrupts: Interrupt[] }[]; values: Values }[]>(
      await send('POST', `/threads/${threadId}/history`, { limit: 10 }),
    );
    expect(history[0]!.tasks.flatMap((t) => t.interrupts)).toEqual([interrupt]);
    expect(history[0]!.values.messages.map((m) => m.id)).toEqual(values.messages.map((m) => m.id));

    // The thread list, found by the agent's graph id, shows the first message of each thread.
    const listed = await json<Thread[]>(
      await send('POST', '/threads/search', { metadata: { graph_id: 'review' }, limit: 100, offset: 0 }),
    );
    const row = listed.find((t) => t.thread_id === threadId)!;
    expect(textOf(row.values.messages[0]!.content)).toBe('Review the login change');
    const byAssistant = await json<Thread[]>(
      await send('POST', '/threads/search', { metadata: { assistant_id: 'review' }, limit: 100, offset: 0 }),
    );
    expect(byAssistant.map((t) => t.thread_id)).toContain(threadId);
  });

  it('approves, edits and rejects from the HITL card with the bodies it sends', async () => {
    const decide = async (threadId: string, decision: unknown) =>
      frames(
        await send('POST', `/threads/${threadId}/runs/stream`, {
          input: {},
          command: { resume: { decisions: [decision] } },
          stream_mode: ['values', 'messages-tuple', 'custom'],
          stream_subgraphs: true,
          stream_resumable: false,
          on_disconnect: 'cancel',
          assistant_id: 'review',
        }),
      );

    const approved = await interruptedThread('Approve me');
    ctx.model.reply(['Published.']);
    const afterApprove = lastValues(await decide(approved.threadId, { type: 'approve' }));
    expect(afterApprove.__interrupt__).toBeUndefined();
    expect(afterApprove.messages.at(-1)).toMatchObject({ type: 'ai', content: 'Published.' });
    const thread = await json<Thread>(await send('GET', `/threads/${approved.threadId}`));
    expect(thread.status).toBe('idle');
    expect(thread.interrupts).toEqual({});

    const edited = await interruptedThread('Edit me');
    ctx.model.reply(['Published the edit.']);
    const afterEdit = lastValues(
      await decide(edited.threadId, { type: 'edit', edited_action: { name: 'gate', args: { analysis: 'Edited.' } } }),
    );
    expect(afterEdit.messages.map((m) => m.content)).toContain('Edited.');

    const rejected = await interruptedThread('Reject me');
    const afterReject = await decide(rejected.threadId, { type: 'reject', message: 'Not this one.' });
    expect(lastValues(afterReject).__interrupt__).toBeUndefined();
    expect((await json<Thread>(await send('GET', `/threads/${rejected.threadId}`))).status).toBe('idle');
  });
});

describe('Agent Inbox', () => {
  /** Agent Inbox's list of one status: the search it sends for each tab. */
  const inbox = async (status: string) =>
    json<Thread[]>(
      await send('POST', '/threads/search', { metadata: { graph_id: 'review' }, status, limit: 10, offset: 0 }),
    );

  it('lists interrupted threads by status, from thread.interrupts alone, in the form it converts', async () => {
    expect((await send('GET', '/info', undefined, null)).status).toBe(200);
    const waiting = await interruptedThread('For the inbox');
    const done = await interruptedThread('Already approved');
    ctx.model.reply(['Done.']);
    await frames(
      await send('POST', `/threads/${done.threadId}/runs/stream`, {
        command: { resume: [{ type: 'accept', args: null }] },
        stream_mode: 'events',
        assistant_id: 'review',
      }),
    );

    const interrupted = await inbox('interrupted');
    expect(interrupted.every((t) => t.status === 'interrupted')).toBe(true);
    expect(interrupted.map((t) => t.thread_id)).toContain(waiting.threadId);
    expect(interrupted.map((t) => t.thread_id)).not.toContain(done.threadId);
    expect((await inbox('idle')).map((t) => t.thread_id)).toContain(done.threadId);

    // normalizeInterrupt reads action_requests[0].arguments; without a HITL form, action_request and config.
    const listed = interrupted.find((t) => t.thread_id === waiting.threadId)!;
    const [interrupt] = Object.values(listed.interrupts).flat();
    expect(interrupt).toEqual(waiting.interrupt);
    expect(interrupt!.value.action_requests[0]!.arguments).toEqual({ analysis: 'Analysis of: For the inbox' });
    expect(interrupt!.value.review_configs[0]!.allowed_decisions).toContain('reject');
    expect(interrupt!.value.action_request).toEqual({
      action: 'gate',
      args: { analysis: 'Analysis of: For the inbox' },
    });
    expect(interrupt!.value.config).toMatchObject({ allow_accept: true, allow_edit: true, allow_respond: true });
    expect(typeof interrupt!.value.description).toBe('string');
    // Opening the item reads the thread.
    const opened = await json<Thread>(await send('GET', `/threads/${waiting.threadId}`));
    expect(opened.interrupts).toEqual(listed.interrupts);
  });

  it('accepts, edits and responds with stream_mode "events", and scans the node names it shows', async () => {
    const resume = async (threadId: string, response: unknown) =>
      frames(
        await send('POST', `/threads/${threadId}/runs/stream`, {
          command: { resume: response },
          stream_mode: 'events',
          assistant_id: 'review',
        }),
      );
    const nodesStarted = (fs: Frame[]) =>
      fs
        .filter((f) => f.event === 'events')
        .map((f) => f.data as { event: string; metadata?: { langgraph_node?: string } })
        .filter((e) => e.event === 'on_chain_start')
        .map((e) => e.metadata?.langgraph_node);

    const accepted = await interruptedThread('Accept in the inbox');
    ctx.model.reply(['Accepted and published.']);
    const acceptFrames = await resume(accepted.threadId, [{ type: 'accept', args: null }]);
    expect(new Set(acceptFrames.map((f) => f.event))).toEqual(new Set(['metadata', 'events']));
    expect(nodesStarted(acceptFrames)).toContain('output');
    expect(acceptFrames.some((f) => f.event === 'error')).toBe(false);
    expect((await json<Thread>(await send('GET', `/threads/${accepted.threadId}`))).status).toBe('idle');

    const edited = await interruptedThread('Edit in the inbox');
    ctx.model.reply(['Published the inbox edit.']);
    await resume(edited.threadId, [{ type: 'edit', args: { action: 'gate', args: { analysis: 'Inbox edit.' } } }]);
    const editedState = await json<{ values: Values }>(await send('GET', `/threads/${edited.threadId}/state`));
    expect(editedState.values.messages.map((m) => m.content)).toContain('Inbox edit.');

    const responded = await interruptedThread('Respond in the inbox');
    ctx.model.reply(['A longer analysis.']);
    const respondFrames = await resume(responded.threadId, [{ type: 'response', args: 'More detail.' }]);
    expect(nodesStarted(respondFrames)).toContain('analysis');
    const again = await json<Thread>(await send('GET', `/threads/${responded.threadId}`));
    expect(again.status).toBe('interrupted');
    const [next] = Object.values(again.interrupts).flat();
    expect(next!.id).not.toBe(responded.interrupt.id);
    expect(next!.value.action_requests[0]!.arguments).toEqual({ analysis: 'A longer analysis.' });
  });

  it('"Mark as Resolved" ends the waiting run and takes the thread out of the interrupted tab', async () => {
    const { threadId } = await interruptedThread('Resolve me');
    const answer = await json<{ configurable: { thread_id: string } }>(
      await send('POST', `/threads/${threadId}/state`, { values: null, as_node: '__end__' }),
    );
    expect(answer.configurable.thread_id).toBe(threadId);
    expect((await inbox('interrupted')).map((t) => t.thread_id)).not.toContain(threadId);
    const thread = await json<Thread>(await send('GET', `/threads/${threadId}`));
    expect(thread.status).toBe('idle');
    expect(thread.interrupts).toEqual({});
  });

  it('"Ignore" sends a background run, which ends the waiting run', async () => {
    const { threadId } = await interruptedThread('Ignore me');
    const run = await json<{ run_id: string }>(
      await send('POST', `/threads/${threadId}/runs`, {
        command: { resume: [{ type: 'ignore', args: null }] },
        assistant_id: 'review',
      }),
    );
    await send('GET', `/threads/${threadId}/runs/${run.run_id}/join`).then((r) => r.text());
    const thread = await json<Thread>(await send('GET', `/threads/${threadId}`));
    expect(thread.status).toBe('idle');
    expect((await inbox('interrupted')).map((t) => t.thread_id)).not.toContain(threadId);
  });
});
