import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeFifo, release, within } from '../../src-server/context/fifo-fixture';
import type { GateDecisionRecord, RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import type { WebhookPayload } from '../../src-server/contracts/webhooks';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { requestServer, type TestRequestInit } from '../helpers/request';
import type { TestServer } from '../helpers/server';
import { addUser, grantRole, signSession } from '../helpers/sessions';
import { readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Agents that act (docs/tools.md), end to end: real PostgreSQL, the server in this process and as processes of its
 * own, a real MCP server over stdio (test/fixtures/mcp-test-server.ts, declared by the fixture agent `tool-review`),
 * the project tools on a real folder, and the Ollama stand-in calling tools as Ollama does.
 */
const SECRET = 'a-session-secret-for-the-tool-tests-0123456789';
const API_TOKEN = 'tool-runs-test-admin-token-0123456789';
const LEASE = { RUN_LEASE_S: '2' };
// Webhooks to a receiver on loopback: every process of the file may send a delivery of the shared outbox.
const ENV = {
  AUTH_ENABLED: 'true',
  SESSION_SECRET: SECRET,
  SVC_API_TOKEN: API_TOKEN,
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  ...LEASE,
};

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let project: string;
const spawned: ServerProcess[] = [];
/** The fixture catalog with the agent that acts (toolAgent), for this file's servers. */
let toolCatalog: string;
const serverEnv = () => ({ ...ENV, GENERATED_DIR: toolCatalog });

beforeAll(async () => {
  toolCatalog = await writeFixtureCatalog([toolAgent]);
  server = await ctx.start(serverEnv());
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(toolCatalog, { recursive: true, force: true });
});

beforeEach(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'tool-runs-'));
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\n');
});
afterEach(async () => {
  for (const child of spawned.splice(0)) await child.stop();
  fs.rmSync(project, { recursive: true, force: true });
});

type Server = Pick<TestServer, 'request'>;
type Call = { name: string; arguments: Record<string, unknown> };
const call = (name: string, args: Record<string, unknown>): Call => ({ name, arguments: args });

const start = (on: Server, message = 'review the change') =>
  on.request('/graphs/tool-review/run', { method: 'POST', json: { message, project_path: project } });

async function followToEnd(server: Server, runId: string, after: number): Promise<ReceivedEvent[]> {
  return readEvents(await server.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(after) } }));
}

/** Runs the agent until it stops (a tool call, the gate, its end): its events, its run id, its thread. */
async function runUntilStop(on: Server = server) {
  const events = await readEvents(await start(on));
  const first = events[0]!.data as { run_id: string; thread_id: string };
  return { events, runId: first.run_id, threadId: first.thread_id };
}

/** Waits until `check` holds. */
const holds = (check: () => Promise<boolean>, timeoutMs?: number) =>
  until(async () => ((await check()) ? true : undefined), timeoutMs);

/** A tool call's row in the record, read through the server's own pool. */
async function recorded(callId: string) {
  const { rows } = await server.pool.query<{ attempts: number; result: string | null }>(
    'SELECT attempts, result FROM svc_tool_calls WHERE id = $1',
    [callId],
  );
  return rows[0];
}

const lastOf = (events: ReceivedEvent[], type: string) => events.filter((e) => e.data.type === type).at(-1);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

async function detail(runId: string): Promise<RunDetail> {
  return (await (await server.request(`/runs/${runId}`)).json()) as RunDetail;
}

function decide(
  threadId: string,
  callId: string,
  action: 'approve' | 'reject' | 'respond',
  body: Record<string, unknown> = {},
  token?: string,
) {
  return server.request(`/threads/${threadId}/tool-calls/${callId}/${action}`, {
    method: 'POST',
    json: body,
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });
}

/** A server process of its own, with the admin's token on its requests, stopped with `stopped` (after each test). */
async function spawn(stopped = spawned) {
  const child = await ctx.spawn(serverEnv());
  stopped.push(child);
  return Object.assign(child, {
    request: (to: string, init?: TestRequestInit) => requestServer(child.url, to, init, API_TOKEN),
  });
}

/** The tool call the run waits at, from its stored detail. */
async function waitingCall(runId: string) {
  const run = await detail(runId);
  expect(run.status).toBe('waiting_approval');
  return run.pending_gate!.tool_call!;
}

describe('a tool call over MCP', () => {
  it('waits for the role its policy names; runs exactly what was approved, edited, once; the record holds its hash', async () => {
    const file = path.join(project, 'effects.log');
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'proposed' })]];
    const { events, runId, threadId } = await runUntilStop();
    expect(lastOf(events, 'tool_waiting')!.data).toMatchObject({
      node: 'intake',
      decide_role: 'owner',
      tool_call: { tool: 'mock.append', server: 'mock', arguments: { file, line: 'proposed' }, interrupted: false },
    });
    const pending = await waitingCall(runId);
    expect(pending.arguments_sha256).toBe(sha256(pending.canonical_arguments));

    // A member is below the policy's owner: 403, and nothing changes.
    const memberId = await addUser(server.pool, 'Mo Member');
    await grantRole(server.pool, memberId, 'project', DEFAULT_PROJECT_ID, 'member');
    const member = await signSession(memberId, SECRET, '1h', 'Mo Member');
    expect((await decide(threadId, pending.call_id, 'approve', {}, member)).status).toBe(403);
    // Arguments that do not fit the tool's input schema: 400, nothing decided.
    const invalid = await decide(threadId, pending.call_id, 'approve', { arguments: { file, line: 42 } });
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { error: { message: string } }).error.message).toMatch(
      /input schema of mock\.append/,
    );
    expect(lines(file)).toEqual([]);

    ctx.model.reply(['Noted.']);
    const edited = { file, line: 'edited by a person' };
    const accepted = await decide(threadId, pending.call_id, 'approve', {
      arguments: edited,
      reason: 'say it plainly',
    });
    expect(accepted.status).toBe(202);
    const rest = await followToEnd(server, runId, lastOf(events, 'tool_waiting')!.id);
    expect(rest.map((e) => e.data.type)).toContain('gate_waiting');
    expect(lines(file)).toEqual(['edited by a person']);
    expect(lastOf(rest, 'tool_decided')!.data).toMatchObject({ decision: 'edit', deciders: ['api-token'] });

    const decisions = (await (await server.request(`/threads/${threadId}/decisions`)).json()) as GateDecisionRecord[];
    const record = decisions.find((d) => d.tool_call_id === pending.call_id)!;
    expect(record).toMatchObject({ decision: 'edit', gate: 'intake', reason: 'say it plainly' });
    expect(JSON.parse(record.arguments!)).toEqual(edited);
    expect(record.arguments_sha256).toBe(sha256(record.arguments!));
    // The model's next turn read the tool's answer, marked as untrusted tool output.
    expect(ctx.model.prompts.at(-2)!.used).toContain('appended "edited by a person"');
  });

  it("a rejection's reason and a person's response reach the model as the tool's answer, and nothing runs", async () => {
    const file = path.join(project, 'effects.log');
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'one' }), call('mock__append', { file, line: 'two' })]];
    const { runId, threadId } = await runUntilStop();
    const first = await waitingCall(runId);
    expect((await decide(threadId, first.call_id, 'reject', { reason: 'not this file' })).status).toBe(202);
    await holds(async () => {
      const waiting = (await detail(runId)).pending_gate?.tool_call?.call_id;
      return waiting !== undefined && waiting !== first.call_id;
    });
    const second = await waitingCall(runId);
    expect(second.call_id).not.toBe(first.call_id);
    ctx.model.reply(['Understood.']);
    expect((await decide(threadId, second.call_id, 'respond', { response: 'pretend it was appended' })).status).toBe(
      202,
    );
    await holds(async () => (await detail(runId)).pending_gate?.node === 'gate');
    expect(lines(file)).toEqual([]);
    const prompt = ctx.model.prompts.find((p) => p.used.includes('pretend it was appended'))!.used;
    expect(prompt).toContain('A person rejected this call: not this file');
    // Deciding a call that no longer waits: 409, with who decided it.
    const late = await decide(threadId, first.call_id, 'approve');
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: { message: string } }).error.message).toMatch(/rejected by api-token/);
  });

  it('a grant lets the next calls of the same tool on the thread through, until it is revoked', async () => {
    const file = path.join(project, 'effects.log');
    ctx.model.toolTurns = [
      [call('mock__append', { file, line: 'first' })],
      [call('mock__append', { file, line: 'second' })],
    ];
    const { runId, threadId } = await runUntilStop();
    const first = await waitingCall(runId);
    expect((await decide(threadId, first.call_id, 'approve', { allow_for_thread: true })).status).toBe(202);
    await holds(async () => (await detail(runId)).pending_gate?.node === 'gate');
    expect(lines(file)).toEqual(['first', 'second']);
    const events = await followToEnd(server, runId, 0);
    expect(events.filter((e) => e.data.type === 'tool_call').map((e) => (e.data as { policy: string }).policy)).toEqual(
      ['ask', 'granted'],
    );
    const grants = (await (await server.request(`/threads/${threadId}/tool-grants`)).json()) as {
      id: string;
      tool: string;
      revoked_at: string | null;
    }[];
    expect(grants).toEqual([
      expect.objectContaining({ tool: 'mock.append', call_id: first.call_id, revoked_at: null }),
    ]);

    // Revoked: the tool asks again on the thread.
    const revoked = await server.request(`/threads/${threadId}/tool-grants/${grants[0]!.id}/revoke`, {
      method: 'POST',
    });
    expect(revoked.status).toBe(200);
    await server.request(`/threads/${threadId}/gates/gate/reject`, { method: 'POST', json: {} });
    await holds(async () => (await detail(runId)).status === 'rejected');
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'third' })]];
    const again = await readEvents(
      await server.request('/graphs/tool-review/run', {
        method: 'POST',
        json: { message: 'once more', thread_id: threadId },
      }),
    );
    expect(again.at(-1)!.data).toMatchObject({ type: 'tool_waiting', tool_call: { tool: 'mock.append' } });
    expect(lines(file)).toEqual(['first', 'second']);
  });

  it('gives a stdio server only the environment it declares', async () => {
    ctx.model.toolTurns = [[call('mock__env', { name: 'PATH' })]];
    const { events } = await runUntilStop();
    const result = lastOf(events, 'tool_result')!.data as { text: string };
    const seen = JSON.parse(result.text.slice(result.text.indexOf('{'))) as { session_secret: string; names: string[] };
    expect(seen.session_secret).toBe('absent');
    expect(seen.names).not.toContain('SESSION_SECRET');
    expect(seen.names).not.toContain('SVC_API_TOKEN');
    expect(seen.names).not.toContain('DATABASE_URL');
  });

  it('waits for two different people when the policy needs two, and an expiry rejects a call nobody decided', async () => {
    ctx.model.toolTurns = [[call('mock__big', { chars: 3 })]];
    const { runId, threadId } = await runUntilStop();
    const pending = await waitingCall(runId);
    const people = await Promise.all(
      ['Pat', 'Quinn'].map(async (name) => {
        const id = await addUser(server.pool, `${name} ${pending.call_id.slice(0, 8)}`);
        await grantRole(server.pool, id, 'project', DEFAULT_PROJECT_ID, 'member');
        return signSession(id, SECRET, '1h', name);
      }),
    );
    const first = await decide(threadId, pending.call_id, 'approve', {}, people[0]);
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ status: 'waiting_approval', approvals: { needed: 2, given: 1 } });
    expect((await decide(threadId, pending.call_id, 'approve', {}, people[0])).status).toBe(409);
    ctx.model.toolTurns = [[call('mock__mixed', {})]];
    expect((await decide(threadId, pending.call_id, 'approve', {}, people[1])).status).toBe(202);

    // The next call expires a second after it waits: rejected by the clock, and the model is told.
    await holds(async () => (await detail(runId)).pending_gate?.tool_call?.tool === 'mock.mixed');
    ctx.model.reply(['Fine.']);
    await holds(async () => (await detail(runId)).pending_gate?.node === 'gate', 15_000);
    const events = await followToEnd(server, runId, 0);
    const results = events.filter((e) => e.data.type === 'tool_result').map((e) => e.data as { text: string });
    expect(results[0]!.text).toContain('xxx');
    expect(results[1]!.text).toMatch(/Nobody approved this call in time: nobody decided the tool call after 1s/);
    expect(lastOf(events, 'tool_decided')!.data).toMatchObject({ decision: 'expire', outcome: 'reject' });
  });

  it("binds each approval to the arguments its person read: after one approver's edit, the round before is refused", async () => {
    ctx.model.toolTurns = [[call('mock__big', { chars: 3 })]];
    const { runId, threadId } = await runUntilStop();
    const pending = await waitingCall(runId);
    const [pat, quinn] = await Promise.all(
      ['Pat', 'Quinn'].map(async (name) => {
        const id = await addUser(server.pool, `${name} round ${pending.call_id.slice(0, 8)}`);
        await grantRole(server.pool, id, 'project', DEFAULT_PROJECT_ID, 'member');
        return signSession(id, SECRET, '1h', name);
      }),
    );
    const stop = (await detail(runId)).stop!;
    expect(stop).toMatchObject({
      kind: 'tool_call',
      round: 1,
      tool_call: { id: pending.call_id, tool: 'mock.big', arguments_sha256: pending.arguments_sha256 },
    });
    const edited = await decide(threadId, pending.call_id, 'approve', { round: 1, arguments: { chars: 5 } }, pat);
    expect(await edited.json()).toMatchObject({ status: 'waiting_approval', approvals: { needed: 2, given: 1 } });
    const now = (await detail(runId)).stop!;
    expect(now).toMatchObject({ id: stop.id, round: 2, tool_call: { arguments_sha256: sha256('{"chars":5}') } });

    // Quinn read the model's arguments: her approval of round 1 is refused, and nothing runs.
    const stale = await decide(threadId, pending.call_id, 'approve', { round: 1 }, quinn);
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { error: { message: string } }).error.message).toMatch(
      new RegExp(
        `^tool call "${pending.call_id}" on thread ${threadId} changed since you read it: approved with edits by Pat`,
      ),
    );
    expect((await detail(runId)).approvals).toMatchObject({ given: 1 });
    // The arguments shown now are what she approves, and what runs.
    ctx.model.reply(['Fine.']);
    expect((await decide(threadId, pending.call_id, 'approve', { round: 2 }, quinn)).status).toBe(202);
    await holds(async () => (await detail(runId)).pending_gate?.node === 'gate');
    const events = await followToEnd(server, runId, 0);
    expect(lastOf(events, 'tool_result')!.data).toMatchObject({ text: expect.stringContaining('xxxxx') });
    expect(lastOf(events, 'tool_decided')!.data).toMatchObject({ decision: 'edit', deciders: ['Pat', 'Quinn'] });
  });

  it("a tool call's gate.waiting webhook names the call, and a receiver decides it with the payload's ids", async () => {
    const bodies: WebhookPayload[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        bodies.push(JSON.parse(body) as WebhookPayload);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const created = await server.request('/webhooks', {
      method: 'POST',
      json: { url, events: ['gate.waiting', 'gate.decided'], project_id: DEFAULT_PROJECT_ID },
    });
    expect(created.status).toBe(201);
    const hook = (await created.json()) as { id: string };
    try {
      const file = path.join(project, 'effects.log');
      ctx.model.toolTurns = [[call('mock__append', { file, line: 'decided from a webhook' })]];
      const runs = await runUntilStop(server);
      const { runId, events } = runs;
      const pending = await waitingCall(runId);
      const payloadOf = (type: string) =>
        until(async () => bodies.find((b) => b.type === type && 'run_id' in b.data && b.data.run_id === runId));
      const waiting = (await payloadOf('gate.waiting')) as Extract<WebhookPayload, { type: 'gate.waiting' }>;
      expect(waiting.data.stop).toEqual({
        kind: 'tool_call',
        id: `${runId}:${lastOf(events, 'tool_waiting')!.id}`,
        round: 1,
        node: 'intake',
        tool_call: { id: pending.call_id, tool: 'mock.append', arguments_sha256: pending.arguments_sha256 },
      });

      ctx.model.reply(['Noted.']);
      const { stop } = waiting.data;
      const accepted = await server.request(`/stops/${stop!.id}/decision`, {
        method: 'POST',
        json: { decision: 'approve', round: stop!.round, arguments: { file, line: 'edited from a webhook' } },
      });
      expect(accepted.status).toBe(202);
      await holds(async () => (await detail(runId)).pending_gate?.node === 'gate');
      expect(lines(file)).toEqual(['edited from a webhook']);
      // The decision's payload names the stop with the arguments that ran: the edit's hash, as recorded.
      const decisions = (await (
        await server.request(`/threads/${runs.threadId}/decisions`)
      ).json()) as GateDecisionRecord[];
      const record = decisions.find((d) => d.tool_call_id === pending.call_id)!;
      const decided = (await payloadOf('gate.decided')) as Extract<WebhookPayload, { type: 'gate.decided' }>;
      expect(decided.data).toMatchObject({
        decision: 'edit',
        stop: { id: stop!.id, kind: 'tool_call', round: 2, tool_call: { arguments_sha256: record.arguments_sha256 } },
      });
      expect(record.arguments_sha256).not.toBe(pending.arguments_sha256);
    } finally {
      await server.request(`/webhooks/${hook.id}`, { method: 'DELETE' });
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('asks before a tool that no policy names (fail closed)', async () => {
    ctx.model.toolTurns = [[call('mock__instance', {})]];
    const { events } = await runUntilStop();
    expect(events.at(-1)!.data).toMatchObject({
      type: 'tool_waiting',
      decide_role: 'member',
      tool_call: { tool: 'mock.instance', server: 'mock' },
    });
  });

  it('never offers a denied tool to the model', async () => {
    ctx.model.toolTurns = [[call('mock__echo', { text: 'hi' })]];
    await runUntilStop();
    const offered = (
      ctx.model.recorded.find((r) => Array.isArray(r.body.tools))!.body.tools as {
        function: { name: string };
      }[]
    ).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['mock__echo', 'mock__append', 'project__read_file']));
    expect(offered).not.toContain('mock__crash');
  });
});

describe('a fork of a run that called a tool', () => {
  it('asks again from before the approved call, and reuses its result from after it', async () => {
    const file = path.join(project, 'effects.log');
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'original' })]];
    const { runId, threadId } = await runUntilStop();
    const pending = await waitingCall(runId);
    await decide(threadId, pending.call_id, 'approve');
    await holds(async () => (await detail(runId)).pending_gate?.node === 'gate');
    await server.request(`/threads/${threadId}/gates/gate/reject`, { method: 'POST', json: {} });
    await holds(async () => (await detail(runId)).status === 'rejected');
    const history = (await (await server.request(`/threads/${threadId}/checkpoints`)).json()) as {
      checkpoint_id: string;
      node: string | null;
      next: string[];
    }[];
    const beforeIntake = history.find((c) => c.next.includes('intake'))!;
    const afterIntake = history.find((c) => c.node === 'intake')!;

    // From after the call: intake is not run again, its tool's result stands; nothing is appended.
    const after = await readEvents(
      await server.request(`/threads/${threadId}/checkpoints/${afterIntake.checkpoint_id}/run`, {
        method: 'POST',
        json: {},
      }),
    );
    expect(after.map((e) => e.data.type)).not.toContain('tool_call');
    expect(after.at(-1)!.data.type).toBe('gate_waiting');
    const forkRun = (after[0]!.data as { run_id: string }).run_id;
    await server.request(`/threads/${threadId}/gates/gate/reject`, { method: 'POST', json: {} });
    await holds(async () => (await detail(forkRun)).status === 'rejected');
    expect(lines(file)).toEqual(['original']);

    // From before it: the call is the fork's own, and asks again.
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'original' })]];
    const before = await readEvents(
      await server.request(`/threads/${threadId}/checkpoints/${beforeIntake.checkpoint_id}/run`, {
        method: 'POST',
        json: {},
      }),
    );
    expect(before.at(-1)!.data).toMatchObject({ type: 'tool_waiting', tool_call: { tool: 'mock.append' } });
    expect((before.at(-1)!.data as { tool_call: { call_id: string } }).tool_call.call_id).not.toBe(pending.call_id);
    expect(lines(file)).toEqual(['original']);
  });
});

describe('the project tools in a run', () => {
  it('refuse a path outside the project and a symlink out of it', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'outside-'));
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'do not read');
    fs.symlinkSync(outside, path.join(project, 'escape'));
    ctx.model.toolTurns = [
      [
        call('project__read_file', { path: '../outside/secret.txt' }),
        call('project__read_file', { path: 'escape/secret.txt' }),
        call('project__read_file', { path: path.join(outside, 'secret.txt') }),
      ],
    ];
    const { events } = await runUntilStop();
    const results = events
      .filter((e) => e.data.type === 'tool_result')
      .map((e) => e.data as { text: string; is_error: boolean });
    expect(results).toHaveLength(3);
    for (const result of results) {
      expect(result.is_error).toBe(true);
      expect(result.text).not.toContain('do not read');
    }
    fs.rmSync(outside, { recursive: true, force: true });
  });
});

describe('a FIFO in the project holds nothing: not the runs, not the studio, not the other tools', () => {
  // A FIFO opened the usual way holds one of libuv's four threads until its other end is opened: four of them stall
  // every file operation of the process. The server runs as a process of its own, so that a stall there leaves this
  // test free to see it, and whatever still waits on a FIFO is woken after the test.
  let fifos: string[] = [];
  afterEach(() => fifos.splice(0).forEach(release));
  const RUNS = 4;
  const ownServer: ServerProcess[] = [];
  let b: Server;
  beforeAll(async () => {
    b = await spawn(ownServer);
  });
  afterAll(async () => {
    for (const child of ownServer) await child.stop();
  });

  /** The studio's files, a static file and the API answer within a few seconds. */
  async function answersPromptly(on: Server) {
    const [ui, bundle, agents] = await within(
      5000,
      Promise.all([on.request('/ui'), on.request('/docs/assets/swagger-ui-bundle.js'), on.request('/agents')]),
    );
    // 200 once the studio is built, 503 saying so before: either way it answers.
    expect([200, 503]).toContain(ui.status);
    expect(bundle.status).toBe(200);
    expect(agents.status).toBe(200);
  }

  const resultsOf = (events: ReceivedEvent[]) =>
    events.filter((e) => e.data.type === 'tool_result').map((e) => e.data as { text: string; is_error: boolean });

  it('runs start on a project whose .gitignore and README.md are FIFOs, without reading them', async () => {
    fs.rmSync(path.join(project, 'README.md'));
    fifos = ['.gitignore', 'README.md'].map((file) => makeFifo(path.join(project, file)));
    fs.writeFileSync(path.join(project, 'NOTES.md'), '# Notes\n');
    const before = ctx.model.requests.length;
    const runs = await within(
      20_000,
      Promise.all(Array.from({ length: RUNS }, async () => readEvents(await start(b)))),
    );
    for (const events of runs) expect(events.at(-1)!.data.type).toBe('gate_waiting');
    const prompt = JSON.stringify(ctx.model.requests[before]!.messages);
    expect(prompt).toContain('NOTES.md');
    expect(prompt).not.toContain('--- README.md ---');
    await answersPromptly(b);
  });

  it('write_file and read_file at a FIFO are refused at once, while the studio and other tools answer', async () => {
    fifos = [makeFifo(path.join(project, 'pipe'))];
    ctx.model.toolTurns = Array.from({ length: RUNS }, () => [
      call('project__read_file', { path: 'pipe' }),
      call('project__write_file', { path: 'pipe', content: 'held?' }),
    ]);
    // Four runs wait for their write to be approved: four writes at the FIFO at once once they are.
    const runs = await Promise.all(Array.from({ length: RUNS }, () => runUntilStop(b)));
    const approved = Date.now();
    const ends = await within(
      20_000,
      Promise.all(
        runs.map(async ({ events, runId, threadId }) => {
          const waiting = lastOf(events, 'tool_waiting')!;
          const { call_id } = (waiting.data as { tool_call: { call_id: string } }).tool_call;
          const decided = await b.request(`/threads/${threadId}/tool-calls/${call_id}/approve`, {
            method: 'POST',
            json: {},
          });
          expect(decided.status).toBe(202);
          return [...events, ...(await followToEnd(b, runId, waiting.id))];
        }),
      ),
    );
    console.log(`four approved writes at a FIFO refused within ${Date.now() - approved} ms`);
    for (const events of ends) {
      expect(resultsOf(events)).toEqual([
        expect.objectContaining({ is_error: true, text: expect.stringContaining('pipe is not a regular file') }),
        expect.objectContaining({
          is_error: true,
          text: expect.stringContaining('pipe is not a regular file: write_file writes regular files only'),
        }),
      ]);
    }
    expect(fs.lstatSync(path.join(project, 'pipe')).isFIFO()).toBe(true);

    await answersPromptly(b);
    ctx.model.toolTurns = [[call('project__read_file', { path: 'README.md' })]];
    const other = await within(10_000, runUntilStop(b));
    expect(resultsOf(other.events)).toEqual([
      expect.objectContaining({ is_error: false, text: expect.stringContaining('# Demo') }),
    ]);
  });
});

describe('exactly once, through a crash', () => {
  it('a call approved and cut off by kill -9 runs again only after a person says so; no model call repeats', async () => {
    const file = path.join(project, 'effects.log');
    const b = await spawn();
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'once', delay_ms: 1500 })]];
    const { runId, threadId, events } = await runUntilStop(b);
    const pending = await waitingCall(runId);
    const callsBefore = ctx.model.requests.length;
    // Approved through B, which executes it: B dies while the tool works, before its result is stored.
    await b.request(`/threads/${threadId}/tool-calls/${pending.call_id}/approve`, { method: 'POST', json: {} });
    await holds(async () => ((await recorded(pending.call_id))?.attempts ?? 0) > 0);
    b.child.kill('SIGKILL');
    await b.exited;

    // Taken over: the call started and has no result, and `append` is neither read-only nor idempotent.
    await holds(async () => (await detail(runId)).pending_gate?.tool_call?.interrupted === true, 15_000);
    const again = await waitingCall(runId);
    expect(again).toMatchObject({ call_id: pending.call_id, interrupted: true, attempts: 1 });
    // Whatever the cut-off call did, it has done by now (it was asked to wait 1.5 s before it acts).
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const before = lines(file).length;
    ctx.model.reply(['Done.']);
    expect((await decide(threadId, again.call_id, 'approve')).status).toBe(202);
    await holds(async () => (await detail(runId)).pending_gate?.node === 'gate', 15_000);
    expect(lines(file).length).toBe(before + 1);
    // The turn that called the tool was replayed from its record: the only model calls since are intake's answer
    // after the tool and the analysis.
    expect(ctx.model.requests.length - callsBefore).toBe(2);
    // What a reader of the run sees: the call asked, decided, asked again as cut off after the takeover, one result.
    const shown = [...events, ...(await followToEnd(server, runId, events.at(-1)!.id))].flatMap(({ data }) => {
      if (data.type === 'tool_waiting') return [data.tool_call!.interrupted ? 'asked again' : 'asked'];
      return ['tool_decided', 'run_resumed', 'tool_result'].includes(data.type) ? [data.type] : [];
    });
    expect(shown).toEqual(['asked', 'tool_decided', 'run_resumed', 'asked again', 'tool_decided', 'tool_result']);
  });

  it('a stored result is never repeated when the process dies after it', async () => {
    const file = path.join(project, 'effects.log');
    const b = await spawn();
    ctx.model.toolTurns = [[call('mock__append', { file, line: 'stored' })]];
    const { runId, threadId } = await runUntilStop(b);
    const pending = await waitingCall(runId);
    // The model's next turn is slow: B dies while it streams, after the tool's result was stored.
    ctx.model.reply(
      Array.from({ length: 60 }, (_, i) => `t${i} `),
      50,
    );
    await b.request(`/threads/${threadId}/tool-calls/${pending.call_id}/approve`, { method: 'POST', json: {} });
    await holds(async () => ((await recorded(pending.call_id))?.result ?? null) !== null);
    b.child.kill('SIGKILL');
    await b.exited;
    ctx.model.reply(['After the takeover.']);
    await holds(async () => (await detail(runId)).pending_gate?.node === 'gate', 15_000);
    expect(lines(file)).toEqual(['stored']);
  });
});
