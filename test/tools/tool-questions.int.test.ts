import fs from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApprovalItem } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { RELEASE_FIELDS, startAskingServer, type AskingServer } from '../fixtures/mcp-asking-server';
import { askingAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { threePeople } from '../helpers/sessions';
import { readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';
import { connectMcp } from '../mcp/mcp-client';

/**
 * Questions from tool servers (docs/approvals.md#questions-from-tool-servers): an MCP server the service calls asks a
 * person mid-call (elicitation, the SDK's server); the question is a stop listed in /approvals, answered at
 * POST /stops/{id}/answer on another process than the one holding the call, and the answer reaches the server, which
 * finishes the call. Two servers on one database stand for two processes; the model is the Ollama stand-in.
 */
const SECRET = 'a-session-secret-for-tool-questions-0123456789';
const ADMIN = 'tool-questions-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });

let asker: AskingServer;
let catalog: string;
let holder: TestServer;
let other: TestServer;
let ann: string;
let vera: string;
let mallory: string;

beforeAll(async () => {
  asker = await startAskingServer();
  // The same agent, its questions waiting two seconds (`tools.questions_expire_after: 2s`).
  const hurried = askingAgent(asker.url);
  hurried.name = 'ask-hurried';
  hurried.source = 'assets/agents/ask-hurried.md';
  hurried.tools = { ...hurried.tools, question_expiry_s: 2 };
  catalog = await writeFixtureCatalog([askingAgent(asker.url), hurried]);
  const env = {
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: ADMIN,
    // The webhook of the last test points at a closed loopback port: its deliveries are read, not received.
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    GENERATED_DIR: catalog,
    MCP_ALLOWED_HOSTS: '127.0.0.1',
    // Shorter than a person takes to answer: the call's limit must stop counting while she does.
    TOOL_CALL_TIMEOUT_S: '2',
  };
  [holder, other] = [await ctx.start(env), await ctx.start(env)];
  const pool = holder.pool;
  ({ ann, vera, mallory } = await threePeople(pool, SECRET, DEFAULT_PROJECT_ID));
});

afterAll(async () => {
  await Promise.all([holder?.close(), other?.close()]);
  await asker?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
});

beforeEach(() => {
  asker.answers.length = 0;
});

const as = (token: string) => ({ authorization: `Bearer ${token}` });

/** The model's intake calls `tool` (then answers); the run starts on the holding server and asks. */
async function runUntilAsked(tool: string, args: Record<string, unknown> = {}, agent = 'ask-review') {
  ctx.model.toolTurns.push([{ name: `asker__${tool}`, arguments: args }]);
  ctx.model.reply(['Noted.']);
  const events: ReceivedEvent[] = [];
  await readEvents(
    await holder.request(`/graphs/${agent}/run`, { method: 'POST', json: { message: 'ask me' }, headers: as(ann) }),
    (event) => {
      events.push(event);
      return event.data.type === 'tool_question' || event.data.type === 'tool_result';
    },
  );
  const runId = (events[0]!.data as { run_id: string }).run_id;
  const asked = events.find((event) => event.data.type === 'tool_question');
  return { runId, asked, stopId: asked ? `${runId}:${asked.id}` : undefined };
}

const answer = (on: TestServer, stopId: string, token: string, body: unknown) =>
  on.request(`/stops/${stopId}/answer`, { method: 'POST', json: body, headers: as(token) });

/** The run's events from the start, once it stops at its gate. */
async function eventsToGate(runId: string): Promise<ReceivedEvent[]> {
  return readEvents(await other.request(`/runs/${runId}/stream`, { headers: as(ann) }));
}

describe('a question an MCP server asks in the middle of a call', () => {
  it('is a stop in /approvals; an answer on another process reaches the server, and the call completes', async () => {
    const { runId, asked, stopId } = await runUntilAsked('ask_release');
    expect(asked!.data).toMatchObject({
      type: 'tool_question',
      tool: 'asker.ask_release',
      server: 'asker',
      mode: 'form',
      message: 'Which name should the release carry?',
      requested_schema: RELEASE_FIELDS,
      url_host: null,
    });
    const inbox = (await (await other.request('/approvals', { headers: as(ann) })).json()) as ApprovalItem[];
    const item = inbox.find((entry) => entry.stop.id === stopId)!;
    expect(item).toMatchObject({
      run_id: runId,
      stop: { kind: 'question', id: stopId, round: 1, node: 'intake', tool_call: null },
      question: 'Which name should the release carry?',
      decide_role: 'member',
      tool_question: {
        server: 'asker',
        tool: 'asker.ask_release',
        mode: 'form',
        requested_schema: RELEASE_FIELDS,
        url: null,
      },
    });
    // The run reads as running, with the question it waits on.
    const detail = await (await other.request(`/runs/${runId}`, { headers: as(ann) })).json();
    expect(detail).toMatchObject({ status: 'running', stop: null });
    expect(detail.questions).toEqual([
      {
        stop_id: stopId,
        node: 'intake',
        asked_at: item.waiting_since,
        expires_at: item.expires_at,
        ...item.tool_question,
      },
    ]);
    // Longer than the call's limit of 2 s: it does not count while a person answers.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const refused = await answer(other, stopId!, ann, { action: 'accept', content: { count: 0 } });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.message).toMatch(/^the answer does not fit the question's fields: .*name/);

    const taken = await answer(other, stopId!, ann, { action: 'accept', content: { name: 'Orion', count: 2 } });
    expect(taken.status).toBe(200);
    expect(await taken.json()).toEqual({ stop_id: stopId, run_id: runId, action: 'accept' });
    const again = await answer(other, stopId!, ann, { action: 'decline' });
    expect(again.status).toBe(409);

    const events = await eventsToGate(runId);
    expect(asker.answers).toEqual([{ tool: 'ask_release', action: 'accept', content: { name: 'Orion', count: 2 } }]);
    expect(events.find((e) => e.data.type === 'tool_question_answered')!.data).toMatchObject({
      stop_id: stopId,
      action: 'accept',
      by: 'Ann',
    });
    expect(events.find((e) => e.data.type === 'tool_result')!.data).toMatchObject({
      tool: 'asker.ask_release',
      is_error: false,
      text: expect.stringContaining('accept {"name":"Orion","count":2}'),
    });
    expect(events.at(-1)!.data.type).toBe('gate_waiting');
    const gone = (await (await other.request('/approvals', { headers: as(ann) })).json()) as ApprovalItem[];
    expect(gone.some((entry) => entry.stop.id === stopId)).toBe(false);
    expect((await (await other.request(`/runs/${runId}`, { headers: as(ann) })).json()).questions).toEqual([]);
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
  });

  it('waits an hour unless the agent sets how long; nobody answering in time, the server hears cancel', async () => {
    const usual = await runUntilAsked('ask_release');
    const hour = Date.parse((usual.asked!.data as { expires_at: string }).expires_at) - Date.now();
    expect(hour).toBeGreaterThan(3590_000);
    expect(hour).toBeLessThanOrEqual(3600_000);
    await other.request(`/runs/${usual.runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });

    const { runId, asked, stopId } = await runUntilAsked('ask_release', {}, 'ask-hurried');
    const wait = Date.parse((asked!.data as { expires_at: string }).expires_at) - Date.now();
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(2000);
    await eventsToGate(runId);
    expect(asker.answers.at(-1)).toEqual({ tool: 'ask_release', action: 'cancel' });
    expect((await answer(other, stopId!, ann, { action: 'accept', content: { name: 'late' } })).status).toBe(409);
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
  });

  it('is withdrawn when the server stops waiting for it: out of the inbox, and too late to answer', async () => {
    const { runId, stopId } = await runUntilAsked('ask_briefly');
    const listed = async () =>
      ((await (await other.request('/approvals', { headers: as(ann) })).json()) as ApprovalItem[]).some(
        (entry) => entry.stop.id === stopId,
      );
    expect(await listed()).toBe(true);
    const events = await eventsToGate(runId);
    expect(asker.answers.at(-1)).toEqual({ tool: 'ask_briefly', action: 'stopped waiting' });
    expect(events.find((e) => e.data.type === 'tool_question_answered')!.data).toMatchObject({
      stop_id: stopId,
      action: 'withdrawn',
      by: null,
    });
    expect(await listed()).toBe(false);
    expect((await answer(other, stopId!, ann, { action: 'accept', content: { name: 'late' } })).status).toBe(409);
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
  });

  it('takes decline and cancel back to the server as they were given', async () => {
    for (const action of ['decline', 'cancel'] as const) {
      const { runId, stopId } = await runUntilAsked('ask_release');
      const taken = await answer(other, stopId!, ann, { action });
      expect(taken.status, await taken.clone().text()).toBe(200);
      await eventsToGate(runId);
      expect(asker.answers.at(-1)).toEqual({ tool: 'ask_release', action });
      await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
    }
    const { runId, stopId } = await runUntilAsked('ask_release');
    const withContent = await answer(other, stopId!, ann, { action: 'decline', content: { name: 'x' } });
    expect(withContent.status).toBe(400);
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
    expect((await answer(other, stopId!, ann, { action: 'accept', content: { name: 'late' } })).status).toBe(409);
  });

  it('shows a url-mode page by its host and takes an accept without content; refuses a page that is not http(s)', async () => {
    const page = 'https://auth.example.com/connect?state=abc';
    const { runId, asked, stopId } = await runUntilAsked('connect', { url: page });
    expect(asked!.data).toMatchObject({ mode: 'url', url_host: 'auth.example.com', requested_schema: null });
    const inbox = (await (await holder.request('/approvals', { headers: as(ann) })).json()) as ApprovalItem[];
    expect(inbox.find((entry) => entry.stop.id === stopId)!.tool_question).toMatchObject({
      mode: 'url',
      url: page,
      url_host: 'auth.example.com',
    });
    expect((await answer(other, stopId!, ann, { action: 'accept' })).status).toBe(200);
    await eventsToGate(runId);
    expect(asker.answers.at(-1)).toEqual({ tool: 'connect', action: 'accept' });
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });

    const script = await runUntilAsked('connect', { url: 'javascript:alert(1)' });
    expect(script.asked).toBeUndefined();
    const events = await eventsToGate(script.runId);
    expect(events.find((e) => e.data.type === 'tool_result')!.data).toMatchObject({
      is_error: true,
      text: expect.stringContaining('only to an http(s) page'),
    });
    await other.request(`/runs/${script.runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
  });

  it('refuses a sampling request with a clear error', async () => {
    const { runId, asked } = await runUntilAsked('sample');
    expect(asked).toBeUndefined();
    const events = await eventsToGate(runId);
    expect(events.find((e) => e.data.type === 'tool_result')!.data).toMatchObject({
      is_error: true,
      text: expect.stringContaining('sampling is not offered: this client does not let tool servers use its models'),
    });
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
  });

  it("is answered by members only: a viewer's answer is refused, another tenant's reads as no such stop", async () => {
    const { runId, stopId } = await runUntilAsked('ask_release');
    const anonymous = await fetch(`${other.url}/stops/${stopId}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'decline' }),
    });
    expect(anonymous.status).toBe(401);
    const viewer = await answer(other, stopId!, vera, { action: 'decline' });
    expect(viewer.status).toBe(403);
    const stranger = await answer(other, stopId!, mallory, { action: 'decline' });
    expect(stranger.status).toBe(404);
    expect((await stranger.json()).error.message).toBe(`no stop "${stopId}"`);
    const strangerInbox = (await (
      await other.request('/approvals', { headers: as(mallory) })
    ).json()) as ApprovalItem[];
    expect(strangerInbox).toEqual([]);
    const decided = await other.request(`/stops/${stopId}/decision`, {
      method: 'POST',
      json: { decision: 'approve' },
      headers: as(ann),
    });
    expect(decided.status).toBe(400);
    expect((await decided.json()).error.message).toBe(
      `stop "${stopId}" is a tool server's question: answer it at POST /stops/${stopId}/answer`,
    );
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
    await until(async () => (await answer(other, stopId!, ann, { action: 'decline' })).status === 409 || undefined);
  });

  it('is listed and answered through the MCP server as well (list_approvals, answer_question)', async () => {
    const { runId, stopId } = await runUntilAsked('ask_release');
    const mcp = await connectMcp(other.url, ann);
    try {
      const listed = (await mcp.call('list_approvals')).structuredContent as {
        approvals: { stop_id: string; kind: string; content: string; tool_question?: object }[];
      };
      expect(listed.approvals.find((item) => item.stop_id === stopId)).toMatchObject({
        kind: 'question',
        content: 'Which name should the release carry?',
        tool_question: { server: 'asker', tool: 'asker.ask_release', mode: 'form', requested_schema: RELEASE_FIELDS },
      });
      // get_run shows what the running run waits on, and where to answer it.
      const read = (await mcp.call('get_run', { run_id: runId })).structuredContent as { questions: object[] };
      expect(read.questions).toEqual([
        expect.objectContaining({ stop_id: stopId, tool: 'asker.ask_release', requested_schema: RELEASE_FIELDS }),
      ]);
      const answered = await mcp.call('answer_question', {
        stop_id: stopId,
        action: 'accept',
        content: { name: 'Vega' },
      });
      expect(answered.structuredContent).toEqual({ stop_id: stopId, run_id: runId, action: 'accept' });
      await eventsToGate(runId);
      expect(asker.answers.at(-1)).toEqual({ tool: 'ask_release', action: 'accept', content: { name: 'Vega' } });
    } finally {
      await mcp.close();
      await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
    }
  });

  it('is reported to webhooks: question.asked, then question.answered with the action and who', async () => {
    const created = await other.request('/webhooks', {
      method: 'POST',
      json: {
        url: 'http://127.0.0.1:9/hook',
        events: ['question.asked', 'question.answered'],
        project_id: DEFAULT_PROJECT_ID,
      },
      headers: as(ADMIN),
    });
    expect(created.status).toBe(201);
    const { id: webhook } = (await created.json()) as { id: string };
    const { runId, stopId } = await runUntilAsked('ask_release');
    expect((await answer(other, stopId!, ann, { action: 'decline' })).status).toBe(200);
    await eventsToGate(runId);
    const payloads = await until(async () => {
      const deliveries = (await (
        await other.request(`/webhooks/${webhook}/deliveries`, { headers: as(ADMIN) })
      ).json()) as { payload: { type: string; data: Record<string, unknown> } }[];
      const mine = deliveries.map((d) => d.payload).filter((p) => p.data.run_id === runId);
      return mine.length === 2 ? mine : undefined;
    });
    const stop = { kind: 'question', id: stopId, round: 1, node: 'intake', tool_call: null };
    const byType = Object.fromEntries(payloads.map((p) => [p.type, p.data]));
    expect(byType['question.asked']).toMatchObject({
      run_id: runId,
      tool: 'asker.ask_release',
      server: 'asker',
      mode: 'form',
      question: 'Which name should the release carry?',
      stop,
    });
    expect(byType['question.answered']).toMatchObject({
      action: 'decline',
      answered_by: { name: 'Ann' },
      stop,
    });
    await other.request(`/webhooks/${webhook}`, { method: 'DELETE', headers: as(ADMIN) });
    await other.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(ann) });
  });
});
