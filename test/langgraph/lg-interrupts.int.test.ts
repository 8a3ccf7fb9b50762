import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { gatedAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { type LgMessage as Message, type Part, collect } from './lg-stream-parts';

/**
 * Gates through the LangGraph API (docs/langgraph-api.md): a run stops as an `__interrupt__` both LangChain's
 * human-in-the-loop clients (Agent Chat UI) and Agent Inbox read, and `command.resume` decides it through the
 * service's decisions: roles, several approvers and the record as at the native endpoints.
 */
const SECRET = 'a-session-secret-for-the-langgraph-gates-0';
const API_TOKEN = 'langgraph-gates-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let admin: Client;

beforeAll(async () => {
  const generatedDir = await writeFixtureCatalog([gatedAgent('pair-review', { approvals: 2 })]);
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: generatedDir,
  });
  admin = new Client({ apiUrl: `${server.url}/lg`, apiKey: API_TOKEN });
});
afterAll(() => server?.close());

interface Interrupt {
  id: string;
  value: {
    action_requests: { name: string; args: Record<string, string>; arguments: unknown; description: string }[];
    review_configs: { action_name: string; allowed_decisions: string[] }[];
    action_request: { action: string; args: Record<string, string> };
    config: Record<string, boolean>;
    description: string;
    gate: { node: string; question: string };
  };
}
type Values = { messages: Message[]; outputs: Record<string, string>; __interrupt__?: Interrupt[] };

const MODES = ['values', 'updates', 'messages-tuple', 'custom'] as const;

const lastValues = (parts: Part[]) => parts.filter((p) => p.event === 'values').at(-1)!.data as Values;
const customTypes = (parts: Part[]) =>
  parts.filter((p) => p.event === 'custom').map((p) => (p.data as { type: string }).type);

/** A run of `agent` streamed to its gate: the interrupt it stops at. */
async function toGate(client: Client, agent = 'review') {
  ctx.model.reply(['Analysis: ship it.']);
  const thread = await client.threads.create();
  const parts = await collect(
    client.runs.stream(thread.thread_id, agent, { input: { message: `Review for ${agent}` }, streamMode: [...MODES] }),
  );
  const runId = (parts[0]!.data as { run_id: string }).run_id;
  const interrupt = lastValues(parts).__interrupt__![0]!;
  return { threadId: thread.thread_id, runId, interrupt, parts };
}

const resume = (client: Client, threadId: string, agent: string, resume: unknown) =>
  collect(client.runs.stream(threadId, agent, { command: { resume }, streamMode: [...MODES] }));

const detail = async (runId: string) => (await (await server.request(`/runs/${runId}`)).json()) as RunDetail;

describe('a gate as an interrupt', () => {
  it('stops the stream with an interrupt in the HITL and Agent Inbox shapes, found in the thread, its state and history', async () => {
    const { threadId, runId, interrupt, parts } = await toGate(admin);
    expect(interrupt.value.action_requests).toEqual([
      {
        name: 'gate',
        args: { analysis: 'Analysis: ship it.' },
        arguments: { analysis: 'Analysis: ship it.' },
        description: 'Review for review \u2014 Publish this review?',
      },
    ]);
    expect(interrupt.value.description).toBe('Review for review \u2014 Publish this review?');
    expect(interrupt.value.review_configs).toEqual([
      { action_name: 'gate', allowed_decisions: ['approve', 'edit', 'reject', 'respond'] },
    ]);
    expect(interrupt.value.action_request).toEqual({ action: 'gate', args: { analysis: 'Analysis: ship it.' } });
    expect(interrupt.value.config).toEqual({
      allow_accept: true,
      allow_edit: true,
      allow_respond: true,
      allow_ignore: true,
    });
    expect(interrupt.value.gate).toMatchObject({ node: 'gate', question: 'Publish this review?' });
    expect(parts.find((p) => p.event === 'updates' && '__interrupt__' in (p.data as object))!.data).toEqual({
      __interrupt__: [interrupt],
    });
    expect(customTypes(parts).at(-1)).toBe('gate_waiting');

    // A run stopped at a gate is not running: the SDK does not reconnect to it, its thread is interrupted.
    expect((await admin.runs.get(threadId, runId)).status).toBe('success');
    const thread = await admin.threads.get(threadId);
    expect(thread.status).toBe('interrupted');
    expect(thread.interrupts).toEqual({ gate: [interrupt] });
    const inbox = await admin.threads.search({ status: 'interrupted', metadata: { graph_id: 'review' }, limit: 100 });
    expect(inbox.map((t) => t.thread_id)).toContain(threadId);
    const [head] = await admin.threads.getHistory(threadId, { limit: 5 });
    expect(head!.tasks[0]!.interrupts).toEqual([interrupt]);
    expect((await admin.threads.getState(threadId)).tasks[0]!.interrupts).toEqual([interrupt]);
    expect(await admin.runs.join(threadId, runId)).toMatchObject({ __interrupt__: [interrupt] });
  });

  it('approve resumes the same run to its end; the decision is recorded as the native one', async () => {
    const { threadId, runId, interrupt } = await toGate(admin);
    ctx.model.reply(['Published.']);
    const parts = await resume(admin, threadId, 'review', { decisions: [{ type: 'approve' }] });
    expect((parts[0]!.data as { run_id: string }).run_id).toBe(runId);
    expect(customTypes(parts)[0]).toBe('gate_approved');
    const values = lastValues(parts);
    expect(values.__interrupt__).toBeUndefined();
    expect(values.messages.at(-1)).toMatchObject({ type: 'ai', name: 'output', content: 'Published.' });
    expect((await admin.threads.get(threadId)).status).toBe('idle');
    expect((await admin.threads.get(threadId)).interrupts).toEqual({});
    const run = await detail(runId);
    expect(run.status).toBe('completed');
    expect(run.decisions).toMatchObject([{ decision: 'approve', decided_by: { name: 'api-token' }, role: 'admin' }]);
    // The interrupt was answered: answering it again is a conflict, as is a resume with nothing waiting.
    await expect(
      resume(admin, threadId, 'review', { [interrupt.id]: { decisions: [{ type: 'approve' }] } }),
    ).rejects.toThrow(/409/);
  });

  it('edit replaces the gated text that later phases read; the message keeps its id', async () => {
    const { threadId, runId, parts: first } = await toGate(admin);
    const analysisId = lastValues(first).messages.find((m) => m.name === 'analysis')!.id;
    ctx.model.reply(['Published the edit.']);
    const parts = await resume(admin, threadId, 'review', {
      decisions: [{ type: 'edit', edited_action: { name: 'gate', args: { analysis: 'Edited: low risk.' } } }],
    });
    const values = lastValues(parts);
    expect(values.outputs.analysis).toBe('Edited: low risk.');
    expect(values.messages.find((m) => m.id === analysisId)!.content).toBe('Edited: low risk.');
    const run = await detail(runId);
    expect(run.decisions).toMatchObject([{ decision: 'edit', edits: { analysis: 'Edited: low risk.' } }]);
    const state = await admin.threads.getState(threadId);
    expect((state.values as Values).outputs.analysis).toBe('Edited: low risk.');
    // An edit of a phase the gate does not show is refused, as natively.
    const other = await toGate(admin);
    await expect(
      resume(admin, other.threadId, 'review', {
        decisions: [{ type: 'edit', edited_action: { name: 'gate', args: { intake: 'sneaky' } } }],
      }),
    ).rejects.toThrow(/400/);
  });

  it('reject ends the run (the phase after the gate never runs), with the message as its reason', async () => {
    const { threadId, runId } = await toGate(admin);
    const calls = ctx.model.requests.length;
    const parts = await resume(admin, threadId, 'review', { decisions: [{ type: 'reject', message: 'Not now.' }] });
    expect(customTypes(parts)).toEqual(expect.arrayContaining(['gate_rejected', 'run_rejected']));
    expect(ctx.model.requests.length).toBe(calls);
    const run = await detail(runId);
    expect(run).toMatchObject({ status: 'rejected', end_reason: 'Not now.' });
    expect((await admin.runs.get(threadId, runId)).status).toBe('success');
    expect((await admin.threads.get(threadId)).status).toBe('idle');
    // The run's last message says it was stopped, in the stream as in the thread's state, its history and a replay.
    const messages = lastValues(parts).messages;
    expect(messages.at(-1)).toMatchObject({ type: 'ai', content: 'Stopped: the approval gate was rejected.' });
    expect((await admin.threads.getState<Values>(threadId)).values.messages).toEqual(messages);
    expect((await admin.threads.getHistory<Values>(threadId, { limit: 1 }))[0]!.values.messages).toEqual(messages);
    expect((await admin.threads.get<Values>(threadId)).values.messages).toEqual(messages);
    const replay = await collect(admin.runs.joinStream(threadId, runId, { lastEventId: '-1', streamMode: [...MODES] }));
    expect(lastValues(replay).messages).toEqual(messages);
  });

  it("Agent Inbox's response sends the analysis back; the gate stops the run again under a new interrupt", async () => {
    const { threadId, runId, interrupt } = await toGate(admin);
    ctx.model.reply(['Analysis, with the detail asked for.']);
    const parts = await resume(admin, threadId, 'review', [{ type: 'response', args: 'More detail, please.' }]);
    const again = lastValues(parts).__interrupt__![0]!;
    expect(again.id).not.toBe(interrupt.id);
    expect(again.value.action_requests[0]!.args).toEqual({ analysis: 'Analysis, with the detail asked for.' });
    expect(customTypes(parts)[0]).toBe('gate_responded');
    expect((await admin.threads.get(threadId)).interrupts).toEqual({ gate: [again] });
    // The old interrupt is no longer asked; Agent Inbox's accept of the new one, under its id, ends the run.
    await expect(resume(admin, threadId, 'review', { [interrupt.id]: [{ type: 'accept' }] })).rejects.toThrow(/409/);
    ctx.model.reply(['Done.']);
    await resume(admin, threadId, 'review', { [again.id]: [{ type: 'accept', args: null }] });
    expect((await detail(runId)).decisions.map((d) => d.decision)).toEqual(['respond', 'approve']);
  });

  it("names its thread in each of Agent Inbox's rows: the thread's name, or its first message", async () => {
    /** Agent Inbox's row of a thread (contexts/utils.ts normalizeInterrupt, interrupted-inbox-item.tsx). */
    const inboxRow = (thread: { interrupts: Record<string, unknown[]> }) => {
      const [interrupt] = Object.values(thread.interrupts).flat() as Interrupt[];
      const request = interrupt!.value.action_requests[0]!;
      return { title: request.name, description: request.description.slice(0, 65) };
    };
    const started = [];
    for (const message of ['Check the billing export for rounding', 'Tighten the login rate limit']) {
      ctx.model.reply(['Analysis: fine.']);
      const thread = await admin.threads.create({ metadata: { inbox: 'rows' } });
      await admin.runs.wait(thread.thread_id, 'review', { input: { messages: [{ type: 'human', content: message }] } });
      started.push(thread.thread_id);
    }
    // A person's name for a thread replaces its first message, as in the studio's thread list.
    const renamed = await server.request(`/threads/${started[1]}`, {
      method: 'PATCH',
      json: { name: 'Rate limit for the login form, second try after the outage' },
    });
    expect(renamed.status).toBe(200);

    const listed = await admin.threads.search({ status: 'interrupted', metadata: { inbox: 'rows' }, limit: 10 });
    const rows = new Map(listed.map((thread) => [thread.thread_id, inboxRow(thread)]));
    expect(rows.get(started[0]!)).toEqual({
      title: 'gate',
      description: 'Check the billing export for rounding \u2014 Publish this review?',
    });
    // Cut to leave room for the question, and still told apart in the 65 characters a row shows.
    expect(rows.get(started[1]!)).toEqual({
      title: 'gate',
      description: 'Rate limit for the login form, second try after\u2026 \u2014 Publish this r',
    });
    // The thread, its state and history carry the same interrupt as the list.
    for (const threadId of started) {
      const thread = await admin.threads.get(threadId);
      expect(inboxRow(thread)).toEqual(rows.get(threadId));
      const state = await admin.threads.getState(threadId);
      expect(state.tasks[0]!.interrupts).toEqual(Object.values(thread.interrupts).flat());
    }
  });

  it("Agent Inbox's ignore rejects, and its mark-as-resolved ends the waiting run", async () => {
    const ignored = await toGate(admin);
    await admin.runs.create(ignored.threadId, 'review', { command: { resume: [{ type: 'ignore', args: null }] } });
    await admin.runs.join(ignored.threadId, ignored.runId);
    expect(await detail(ignored.runId)).toMatchObject({ status: 'rejected', end_reason: 'ignored' });

    const resolved = await toGate(admin);
    await admin.threads.updateState(resolved.threadId, { values: null, asNode: '__end__' });
    expect(await detail(resolved.runId)).toMatchObject({ status: 'cancelled', end_reason: 'resolved' });
    expect((await admin.threads.get(resolved.threadId)).status).toBe('idle');
    await expect(admin.threads.updateState(resolved.threadId, { values: { x: 1 } })).rejects.toThrow(/400/);
  });
});

describe('who decides', () => {
  const person = async (name: string, role: 'viewer' | 'member') => {
    const id = await addUser(server.pool, name, [['project', DEFAULT_PROJECT_ID, role]]);
    const token = await signSession(id, SECRET, '1h', name);
    return new Client({ apiUrl: `${server.url}/lg`, apiKey: token });
  };

  it('a viewer may see the interrupt but not decide it', async () => {
    const { threadId } = await toGate(admin);
    const viewer = await person('vic', 'viewer');
    expect((await viewer.threads.get(threadId)).status).toBe('interrupted');
    await expect(resume(viewer, threadId, 'review', { decisions: [{ type: 'approve' }] })).rejects.toThrow(/403/);
  });

  it('a gate that needs two approvers keeps waiting after the first, and resumes after the second', async () => {
    const ann = await person('ann', 'member');
    const bob = await person('bob', 'member');
    const { threadId, runId, interrupt } = await toGate(ann, 'pair-review');
    const first = await resume(ann, threadId, 'pair-review', { decisions: [{ type: 'approve' }] });
    // The stream shows the same stop again: it still waits there.
    expect(lastValues(first).__interrupt__).toEqual([interrupt]);
    expect((await ann.threads.get(threadId)).status).toBe('interrupted');
    await expect(resume(ann, threadId, 'pair-review', { decisions: [{ type: 'approve' }] })).rejects.toThrow(/409/);
    ctx.model.reply(['Both agreed.']);
    const second = await resume(bob, threadId, 'pair-review', { decisions: [{ type: 'approve' }] });
    expect(lastValues(second).__interrupt__).toBeUndefined();
    expect((await detail(runId)).decisions.map((d) => d.decided_by.name)).toEqual(['ann', 'bob']);
  });
});
