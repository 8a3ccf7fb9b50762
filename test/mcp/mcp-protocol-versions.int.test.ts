import { describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';

/**
 * /mcp answers each protocol revision in its own shapes (docs/mcp.md#protocol-versions), spoken here as a client of
 * that revision would, in raw JSON-RPC over streamable HTTP: the SDK's client always asks for the newest.
 */
const API_TOKEN = 'mcp-versions-admin-token-0123456789';
const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN } });

type Message = { id?: number | string; method?: string; params?: Record<string, unknown>; result?: unknown };

const post = (body: unknown, session?: string, version?: string) =>
  fetch(`${ctx.server.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${API_TOKEN}`,
      ...(session ? { 'mcp-session-id': session } : {}),
      ...(version ? { 'mcp-protocol-version': version } : {}),
    },
    body: JSON.stringify(body),
  });

/** A session of `version`, initialised as its clients do; the server's initialize result. */
async function open(version: string, capabilities: Record<string, unknown> = {}) {
  const answer = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: version, capabilities, clientInfo: { name: `client-${version}`, version: '1' } },
  });
  expect(answer.status).toBe(200);
  const session = answer.headers.get('mcp-session-id')!;
  const [initialized] = await messages(answer);
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session, version);
  return { session, result: initialized!.result as Record<string, unknown> };
}

/** The JSON-RPC messages of an answer: one JSON body, or its stream's events, each handed to `seen` as it comes. */
async function messages(answer: Response, seen?: (message: Message) => void): Promise<Message[]> {
  if (!answer.headers.get('content-type')?.includes('text/event-stream')) return [(await answer.json()) as Message];
  const all: Message[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = answer.body!.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    buffer += decoder.decode(chunk.value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer
        .slice(0, end)
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .join('');
      buffer = buffer.slice(end + 2);
      if (!data) continue;
      const message = JSON.parse(data) as Message;
      all.push(message);
      seen?.(message);
    }
  }
  return all;
}

/** run_agent over a session of `version`, each question approved as it comes: the questions, and the answers. */
async function runAndApprove(session: string, version: string, message: string) {
  const asked: Message[] = [];
  const call = await post(
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'run_agent', arguments: { agent: 'review', message } },
    },
    session,
    version,
  );
  const answered = await messages(call, (question) => {
    if (question.method !== 'elicitation/create') return;
    asked.push(question);
    void post(
      { jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { decision: 'approve' } } },
      session,
      version,
    );
  });
  return { asked, answered };
}

describe('the revision a client speaks', () => {
  it('asks a 2025-06-18 client in its own form: no mode, options named in enumNames', async () => {
    ctx.model.reply(['An ', 'older ', 'client.']);
    const version = '2025-06-18';
    const { session, result } = await open(version, { elicitation: {} });
    expect(result.protocolVersion).toBe(version);
    const { asked, answered } = await runAndApprove(session, version, 'review for an older client');
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { mode?: string; requestedSchema: { properties: Record<string, object> } };
    expect(params.mode).toBeUndefined();
    expect(params.requestedSchema.properties.decision).toEqual({
      type: 'string',
      title: 'Decision',
      enum: ['approve', 'edit', 'respond', 'reject'],
      enumNames: ['Approve', 'Approve with my edited text', 'Send my answer back to the phase before', 'Reject'],
    });
    const final = answered.find((message) => message.id === 1)!.result as { structuredContent: object };
    expect(final.structuredContent).toMatchObject({ status: 'completed', output: 'An older client.' });
  });

  it('asks a 2025-11-25 client with mode "form" and titled options', async () => {
    ctx.model.reply(['A ', 'current ', 'client.']);
    const version = '2025-11-25';
    const { session } = await open(version, { elicitation: { form: {} } });
    const { asked } = await runAndApprove(session, version, 'review for a current client');
    const params = asked[0]!.params as { mode?: string; requestedSchema: { properties: Record<string, object> } };
    expect(params.mode).toBe('form');
    expect(params.requestedSchema.properties.decision).toMatchObject({
      oneOf: expect.arrayContaining([{ const: 'approve', title: 'Approve' }]),
    });
  });

  it('refuses a JSON-RPC batch from a session of 2025-06-18 or later, and answers one from 2025-03-26', async () => {
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ];
    for (const version of ['2025-06-18', '2025-11-25']) {
      const { session } = await open(version);
      const refused = await post(batch, session, version);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: `Invalid Request: JSON-RPC batches are not part of protocol ${version} (removed in 2025-06-18): send one message per request`,
        },
      });
    }
    const { session } = await open('2025-03-26');
    const answered = await messages(await post(batch, session, '2025-03-26'));
    expect(answered.map((message) => message.id).sort()).toEqual([1, 2]);
  });

  it('declares what it does: tasks for tools/call, and no list changes (it has no stream to send them on)', async () => {
    const { result } = await open('2025-11-25');
    expect(result.capabilities).toMatchObject({
      tools: { listChanged: false },
      resources: { listChanged: false },
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    const stream = await fetch(`${ctx.server.url}/mcp`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
    expect(stream.status).toBe(405);
  });

  it('answers a revision it does not know with the newest it does, and keeps the session at that one', async () => {
    const { session, result } = await open('2099-01-01', { elicitation: {} });
    expect(result.protocolVersion).toBe('2025-11-25');
    const listed = await messages(await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, session, '2025-11-25'));
    expect((listed[0]!.result as { tools: object[] }).tools.length).toBeGreaterThan(0);
  });
});
