import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalItem, GateDecisionRecord, RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import type { ToolPolicy } from '../../src-server/contracts/tools';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * An organisation's floor of tool policies (docs/tools.md#an-organisations-floor), end to end: its admins set it, the
 * agent `tool-review` (which allows `mock.echo`) cannot loosen it, and the waiting call says whose policy asks.
 */
const SECRET = 'a-session-secret-for-the-floor-tests-0123456789';
const API_TOKEN = 'org-tool-policies-test-admin-token-0123456789';

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let catalog: string;
let project: string;
let adminId: string;
let admin: string;
let member: string;
let outsider: string;

beforeAll(async () => {
  catalog = await writeFixtureCatalog([toolAgent]);
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'org-tool-policies-'));
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\n');
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: catalog,
  });
  adminId = await addUser(server.pool, 'Ada Admin', [['org', DEFAULT_ORG_ID, 'admin']]);
  admin = await signSession(adminId, SECRET, '1h', 'Ada Admin');
  const memberId = await addUser(server.pool, 'Mo Member', [['org', DEFAULT_ORG_ID, 'member']]);
  member = await signSession(memberId, SECRET, '1h', 'Mo Member');
  const other = (await (
    await server.request('/orgs', { method: 'POST', json: { name: 'Globex' }, headers: as(API_TOKEN) })
  ).json()) as { id: string };
  const outsiderId = await addUser(server.pool, 'Otto Outsider', [['org', other.id, 'admin']]);
  outsider = await signSession(outsiderId, SECRET, '1h', 'Otto Outsider');
});
afterEach(async () => {
  expect((await setFloor(admin, {})).status).toBe(200);
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
  fs.rmSync(project, { recursive: true, force: true });
});

const as = (token: string) => ({ authorization: `Bearer ${token}` });
const floorPath = `/orgs/${DEFAULT_ORG_ID}/tool-policies`;
const setFloor = (token: string, policies: Record<string, unknown>) =>
  server.request(floorPath, { method: 'PUT', json: { policies }, headers: as(token) });
const readFloor = (token: string) => server.request(floorPath, { headers: as(token) });

/** The administrator's run of `tool-review`, read to where it stops. */
async function runUntilStop(): Promise<{ runId: string; threadId: string; events: ReceivedEvent[] }> {
  const res = await server.request('/graphs/tool-review/run', {
    method: 'POST',
    json: { message: 'review the change', project_path: project },
    headers: as(API_TOKEN),
  });
  expect(res.status).toBe(200);
  const events = await readEvents(res);
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { runId: start.run_id, threadId: start.thread_id, events };
}

async function detail(runId: string): Promise<RunDetail> {
  return (await (await server.request(`/runs/${runId}`, { headers: as(API_TOKEN) })).json()) as RunDetail;
}

async function cancel(runId: string): Promise<void> {
  await server.request(`/runs/${runId}/cancel`, { method: 'POST', json: {}, headers: as(API_TOKEN) });
  await until(async () => ((await detail(runId)).status === 'cancelled' ? true : undefined));
}

/** The tools the model was last offered, by the names it is offered them under. */
const lastOffered = () =>
  (ctx.model.recorded.findLast((r) => Array.isArray(r.body.tools))!.body.tools as { function: { name: string } }[]).map(
    (t) => t.function.name,
  );

describe("an organisation's tool policies", () => {
  it('make a call the agent allows ask, with their options, and the waiting call names them', async () => {
    const set = await setFloor(admin, { 'mock.echo': { policy: 'ask', decide_role: 'owner' } });
    expect(set.status).toBe(200);
    const floor: ToolPolicy = {
      tool: 'mock.echo',
      policy: 'ask',
      ask: { decide_role: 'owner', approvals: 1, expiry: null },
    };
    expect(await set.json()).toMatchObject({
      org_id: DEFAULT_ORG_ID,
      policies: [floor],
      updated_by: { id: adminId, name: 'Ada Admin' },
    });
    // Anyone with a role in the organisation reads them.
    expect(await (await readFloor(member)).json()).toMatchObject({ policies: [floor] });

    ctx.model.toolTurns = [[{ name: 'mock__echo', arguments: { text: 'hi' } }]];
    const { runId, threadId, events } = await runUntilStop();
    expect(events.find((e) => e.data.type === 'tool_call')!.data).toMatchObject({
      tool: 'mock.echo',
      policy: 'ask',
      policy_source: 'organisation',
    });
    expect(events.at(-1)!.data).toMatchObject({
      type: 'tool_waiting',
      decide_role: 'owner',
      tool_call: { tool: 'mock.echo', policy_source: 'organisation' },
    });
    const inbox = (await (await server.request('/approvals', { headers: as(API_TOKEN) })).json()) as ApprovalItem[];
    const pending = inbox.find((item) => item.run_id === runId)!.tool_call!;
    expect(pending).toMatchObject({ tool: 'mock.echo', policy_source: 'organisation' });
    expect((await detail(runId)).pending_gate!.tool_call).toEqual(pending);

    const approved = await server.request(`/threads/${threadId}/tool-calls/${pending.call_id}/approve`, {
      method: 'POST',
      json: {},
      headers: as(API_TOKEN),
    });
    expect(approved.status).toBe(202);
    await until(async () => ((await detail(runId)).pending_gate?.node === 'gate' ? true : undefined));
    const { rows } = await server.pool.query<{ policy: string; result: string }>(
      'SELECT policy, result FROM svc_tool_calls WHERE id = $1',
      [pending.call_id],
    );
    expect(rows).toEqual([{ policy: 'ask', result: 'hi' }]);
    // The decision record names where the policy that asked came from.
    const decisions = (await (
      await server.request(`/threads/${threadId}/decisions`, { headers: as(API_TOKEN) })
    ).json()) as GateDecisionRecord[];
    expect(decisions.find((d) => d.tool_call_id === pending.call_id)).toMatchObject({
      decision: 'approve',
      policy_source: 'organisation',
    });
    await cancel(runId);
  });

  it('deny a tool the agent allows: it is never offered to the model', async () => {
    expect((await setFloor(admin, { 'mock.echo': 'deny' })).status).toBe(200);
    const { runId } = await runUntilStop();
    expect(lastOffered()).toContain('mock__append');
    expect(lastOffered()).not.toContain('mock__echo');
    await cancel(runId);
  });

  it('leave a tool the floor names less strictly to the agent', async () => {
    expect((await setFloor(admin, { 'mock.*': 'allow' })).status).toBe(200);
    ctx.model.toolTurns = [[{ name: 'mock__append', arguments: { file: path.join(project, 'x.log'), line: 'x' } }]];
    const { runId, events } = await runUntilStop();
    expect(events.at(-1)!.data).toMatchObject({
      type: 'tool_waiting',
      decide_role: 'owner',
      tool_call: { tool: 'mock.append', policy_source: 'agent' },
    });
    await cancel(runId);
  });

  it("are set by the organisation's admins only, and seen by no one outside it", async () => {
    expect((await setFloor(member, { 'mock.echo': 'deny' })).status).toBe(403);
    expect((await readFloor(outsider)).status).toBe(404);
    expect((await setFloor(outsider, { 'mock.echo': 'deny' })).status).toBe(404);
    expect(await (await readFloor(member)).json()).toMatchObject({ policies: [] });
  });

  it("are checked as an agent's policies are, whatever servers the organisation's agents declare", async () => {
    const refused = await setFloor(admin, { mock: 'deny' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: {
        code: 'invalid_request',
        message: 'invalid request body: policies.mock: "mock" is not <server>.<tool> or <server>.*',
        details: { fields: [{ field: 'policies.mock', message: '"mock" is not <server>.<tool> or <server>.*' }] },
      },
    });
    const noSuchProjectTool = await setFloor(admin, { 'project.delete_file': 'deny' });
    expect(noSuchProjectTool.status).toBe(400);
    expect(((await noSuchProjectTool.json()) as { error: { message: string } }).error.message).toMatch(
      /^invalid request body: policies\["project\.delete_file"\]: "delete_file" is not a project tool/,
    );
    const optionsOnAllow = await setFloor(admin, { 'jira.*': { policy: 'allow', approvals: 2 } });
    expect(optionsOnAllow.status).toBe(400);
    expect(((await optionsOnAllow.json()) as { error: { message: string } }).error.message).toBe(
      'invalid request body: policies["jira.*"].approvals: only a policy that asks takes a gate\'s options; this one is allow',
    );
    const anyServer = await setFloor(admin, { 'jira.*': { policy: 'ask', expires_after: '1h' } });
    expect(anyServer.status).toBe(200);
    expect(await anyServer.json()).toMatchObject({
      policies: [
        {
          tool: 'jira.*',
          policy: 'ask',
          ask: { decide_role: 'member', approvals: 1, expiry: { after_s: 3600, action: 'reject', target: null } },
        },
      ],
    });
  });
});
