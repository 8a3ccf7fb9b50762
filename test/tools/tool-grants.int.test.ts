import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunDetail, ToolGrant } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * "Allow for the rest of this thread" is worth what its granter may decide now: a grant by an owner of a tool that an
 * owner must approve stops being honoured when she is demoted or removed, and holds again if her role comes back.
 */
const SECRET = 'a-session-secret-for-the-grant-tests-0123456789';
const API_TOKEN = 'tool-grants-test-admin-token-0123456789';

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let catalog: string;
let project: string;
let ownerId: string;
let owner: string;
let member: string;

beforeAll(async () => {
  catalog = await writeFixtureCatalog([toolAgent]);
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'tool-grants-'));
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\n');
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: catalog,
    PROJECT_ROOTS: project,
  });
  ownerId = await addUser(server.pool, 'Olga Owner', [['project', DEFAULT_PROJECT_ID, 'owner']]);
  owner = await signSession(ownerId, SECRET, '1h', 'Olga Owner');
  member = await signSession(
    await addUser(server.pool, 'Mo Member', [['project', DEFAULT_PROJECT_ID, 'member']]),
    SECRET,
    '1h',
    'Mo Member',
  );
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
  fs.rmSync(project, { recursive: true, force: true });
});

const as = (token: string) => ({ authorization: `Bearer ${token}` });
const append = (file: string, line: string) => ({ name: 'mock__append', arguments: { file, line } });
const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

/** The member's run in the thread (a new one when `threadId` is undefined), read to where it stops. */
async function runUntilStop(threadId?: string): Promise<{ runId: string; threadId: string; events: ReceivedEvent[] }> {
  const res = await server.request('/graphs/tool-review/run', {
    method: 'POST',
    json: { message: 'append a line', ...(threadId ? { thread_id: threadId } : { project_path: project }) },
    headers: as(member),
  });
  expect(res.status).toBe(200);
  const events = await readEvents(res);
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { runId: start.run_id, threadId: start.thread_id, events };
}

async function detail(runId: string): Promise<RunDetail> {
  return (await (await server.request(`/runs/${runId}`, { headers: as(API_TOKEN) })).json()) as RunDetail;
}

/** Ends a run waiting at its gate, so that the thread takes another. */
async function endAtGate(threadId: string, runId: string): Promise<void> {
  await until(async () => ((await detail(runId)).pending_gate?.node === 'gate' ? true : undefined));
  const res = await server.request(`/threads/${threadId}/gates/gate/reject`, {
    method: 'POST',
    json: {},
    headers: as(owner),
  });
  expect(res.status).toBe(202);
  await until(async () => ((await detail(runId)).status === 'rejected' ? true : undefined));
}

const policies = (events: ReceivedEvent[]) =>
  events.filter((e) => e.data.type === 'tool_call').map((e) => (e.data as { policy: string }).policy);

/** The thread's next run appends one line: whether it ran under the grant, or asks. */
async function nextCall(threadId: string, file: string, line: string): Promise<'granted' | 'ask'> {
  ctx.model.toolTurns = [[append(file, line)]];
  ctx.model.reply(['Done.']);
  const run = await runUntilStop(threadId);
  const [policy] = policies(run.events);
  if (policy === 'ask') {
    expect(run.events.at(-1)!.data).toMatchObject({ type: 'tool_waiting', tool_call: { tool: 'mock.append' } });
    await server.request(`/runs/${run.runId}/cancel`, { method: 'POST', json: {}, headers: as(API_TOKEN) });
  } else {
    await endAtGate(threadId, run.runId);
  }
  return policy as 'granted' | 'ask';
}

describe("a thread's tool grant", () => {
  it("is honoured while its granter holds the policy's role, and not once she is demoted or removed", async () => {
    const file = path.join(project, 'effects.log');
    ctx.model.toolTurns = [[append(file, 'first')], [append(file, 'second')]];
    ctx.model.reply(['Done.']);
    const first = await runUntilStop();
    const waiting = (await detail(first.runId)).pending_gate!.tool_call!;
    const approved = await server.request(`/threads/${first.threadId}/tool-calls/${waiting.call_id}/approve`, {
      method: 'POST',
      json: { allow_for_thread: true },
      headers: as(owner),
    });
    expect(approved.status).toBe(202);
    await endAtGate(first.threadId, first.runId);
    expect(lines(file)).toEqual(['first', 'second']);
    const grants = (await (
      await server.request(`/threads/${first.threadId}/tool-grants`, { headers: as(member) })
    ).json()) as ToolGrant[];
    expect(grants).toEqual([
      expect.objectContaining({ tool: 'mock.append', granted_by: { id: ownerId, name: 'Olga Owner' } }),
    ]);

    expect(await nextCall(first.threadId, file, 'third')).toBe('granted');
    await server.pool.query(`UPDATE svc_memberships SET role = 'viewer' WHERE user_id = $1`, [ownerId]);
    expect(await nextCall(first.threadId, file, 'as a viewer')).toBe('ask');
    await server.pool.query(`UPDATE svc_memberships SET role = 'owner' WHERE user_id = $1`, [ownerId]);
    expect(await nextCall(first.threadId, file, 'an owner again')).toBe('granted');
    const removed = await server.request(`/projects/${DEFAULT_PROJECT_ID}/members/${ownerId}`, {
      method: 'DELETE',
      headers: as(API_TOKEN),
    });
    expect(removed.status).toBe(204);
    expect(await nextCall(first.threadId, file, 'removed')).toBe('ask');
    expect(lines(file)).toEqual(['first', 'second', 'third', 'an owner again']);
  });
});
