import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDetail, AgentValidation, AgentVersion, SourceProblem } from '../../src-server/contracts/agents';
import type { AssetSummary } from '../../src-server/contracts/assets';
import type { RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_GENERATED_DIR, loadCatalog } from '../../src-server/assets/catalog';
import { createAccess } from '../../src-server/auth/access';
import { API_TOKEN_ADMIN } from '../../src-server/auth/principal';
import { agentsRepository } from '../../src-server/db/agents.repository';
import { tenancyRepository } from '../../src-server/db/tenancy.repository';
import { AgentDirectory } from '../../src-server/services/agent-directory';
import { useIntegrationServer } from '../helpers/integration';
import { connectMcp } from '../mcp/mcp-client';
import type { ServerProcess } from '../helpers/process';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { followAccepted, readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Agents people make: the asset file's text stored per project through the API, versioned, runnable on every process
 * of a cluster at once, each run on the version it started with.
 */

const SECRET = 'a-session-secret-for-tests-only-0123456789';
const API_TOKEN = 'instance-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });

const agentSource = (name: string, prompt: string, extra = '') =>
  `---\nname: ${name}\ndescription: Writes release notes from a list of changes\n${extra}---\n${prompt}\n`;

const commandSource = (name: string, prompt: string) =>
  `---\nname: ${name}\ndescription: Says what changed, in one step\nphases:\n  execute:\n    description: Say it\n---\n${prompt}\n`;

type Answer<T = Record<string, unknown>> = {
  status: number;
  body: T & { error?: { message: string; details?: { problems: SourceProblem[] } } };
};

let a: TestServer;
let b: ServerProcess;
let acme: { org: string; team: string; alpha: string; beta: string };
let globex: { org: string; project: string };
const tokens: Record<string, string> = {};

async function call<T = Record<string, unknown>>(
  base: string,
  token: string,
  method: string,
  path: string,
  json?: unknown,
): Promise<Answer<T>> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

/** Runs `agent` on `base` and reads its stream to its end or gate. */
async function run(base: string, token: string, agent: string, body: Record<string, unknown>) {
  const res = await fetch(`${base}/graphs/${agent}/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'v2.1 adds dark mode', ...body }),
  });
  expect(res.status).toBe(200);
  const events = await readEvents(res);
  const start = events[0]!.data as { run_id: string; thread_id: string; agent_version?: string };
  return { events, runId: start.run_id, threadId: start.thread_id, version: start.agent_version };
}

const types = (events: ReceivedEvent[]) => events.map((e) => (e.data as { type: string }).type);
const nodesEntered = (events: ReceivedEvent[]) =>
  events.filter((e) => e.data.type === 'node_enter').map((e) => (e.data as { node: string }).node);
/** Whether some call the model received carried `text` (in its instructions). */
const modelSaw = (text: string) => ctx.model.requests.some((r) => JSON.stringify(r).includes(text));

beforeAll(async () => {
  const env = { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN };
  a = await ctx.start(env);
  b = await ctx.spawn(env);
  const created = async (path: string, json: unknown) =>
    (await call<{ id: string }>(a.url, API_TOKEN, 'POST', path, json)).body.id;
  const org = await created('/orgs', { name: 'Acme' });
  const team = await created('/teams', { name: 'Platform', parent_id: org });
  acme = {
    org,
    team,
    alpha: await created('/projects', { name: 'Alpha', parent_id: team }),
    beta: await created('/projects', { name: 'Beta', parent_id: team }),
  };
  const other = await created('/orgs', { name: 'Globex' });
  const otherTeam = await created('/teams', { name: 'Ops', parent_id: other });
  globex = { org: other, project: await created('/projects', { name: 'Gamma', parent_id: otherTeam }) };
  const person = async (name: string, roles: Parameters<typeof addUser>[2]) =>
    (tokens[name] = await signSession(await addUser(a.pool, name, roles), SECRET, '1h', name));
  await person('olivia', [['project', acme.alpha, 'owner']]);
  await person('max', [['project', acme.alpha, 'member']]);
  await person('vera', [['project', acme.alpha, 'viewer']]);
  await person('gus', [['project', globex.project, 'owner']]);
});
afterAll(async () => {
  await b?.stop();
  await a?.close();
});

describe('an agent made through the API', () => {
  it('runs at once on the other process, at the version just saved, and each run keeps the prompt it records', async () => {
    const created = await call<AgentDetail>(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, {
      source: agentSource('release-notes', 'Write release notes. PROMPT-ONE'),
      note: 'first draft',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'release-notes', kind: 'agent', origin: 'stored', version: '1' });
    // Behind a load balancer the next request may reach the other process before it has heard of the save: it reads
    // the agent by name, so what was just saved is there.
    expect((await call(b.url, tokens.olivia!, 'GET', '/agents/release-notes')).status).toBe(200);

    ctx.model.reply(['notes ']);
    const first = await run(b.url, tokens.olivia!, 'release-notes', { project_id: acme.alpha });
    expect(types(first.events).at(-1)).toBe('gate_waiting');
    expect(first.version).toBe('1');
    expect(modelSaw('PROMPT-ONE')).toBe(true);

    const updated = await call<AgentDetail>(a.url, tokens.olivia!, 'PUT', '/agents/release-notes', {
      source: agentSource('release-notes', 'Write release notes. PROMPT-TWO'),
      note: 'sharper',
    });
    expect(updated.status).toBe(200);
    expect(updated.body.version).toBe('2');
    ctx.model.requests.length = 0;
    const second = await run(b.url, tokens.olivia!, 'release-notes', { project_id: acme.alpha });
    expect(second.version).toBe('2');
    expect(modelSaw('PROMPT-TWO')).toBe(true);
    expect(modelSaw('PROMPT-ONE')).toBe(false);
    // The list is read from memory: a version saved through one process is listed by the other within a second.
    const third = await call<AgentDetail>(a.url, tokens.olivia!, 'PUT', '/agents/release-notes', {
      source: agentSource('release-notes', 'Write release notes. PROMPT-THREE'),
      note: 'shorter',
    });
    expect(third.body.version).toBe('3');
    const since = Date.now();
    await until(async () => {
      const listed = await call<AssetSummary[]>(b.url, tokens.olivia!, 'GET', '/agents');
      return listed.body.find((s) => s.name === 'release-notes')?.version === '3' ? true : undefined;
    });
    expect(Date.now() - since).toBeLessThan(1000);

    for (const [runId, version] of [
      [first.runId, '1'],
      [second.runId, '2'],
    ] as const) {
      const detail = await call<RunDetail>(a.url, tokens.olivia!, 'GET', `/runs/${runId}`);
      expect(detail.body.agent_version).toBe(version);
    }
    const versions = await call<AgentVersion[]>(a.url, tokens.vera!, 'GET', '/agents/release-notes/versions');
    expect(versions.body.map((v) => [v.version, v.note, v.created_by, v.current])).toEqual([
      [3, 'shorter', 'olivia', true],
      [2, 'sharper', 'olivia', false],
      [1, 'first draft', 'olivia', false],
    ]);
    const one = await call<{ source: string }>(a.url, tokens.vera!, 'GET', '/agents/release-notes/versions/1');
    expect(one.body.source).toContain('PROMPT-ONE');
  });

  it('is run at the version just saved by a process that has not heard of the save yet', async () => {
    // A directory as a process keeps it, loaded before the save and told of no change since: a process behind a load
    // balancer that the save's announcement has not reached when the next request comes.
    const deaf = new AgentDirectory(
      loadCatalog(DEFAULT_GENERATED_DIR),
      agentsRepository(a.pool),
      createAccess(tenancyRepository(a.pool)),
    );
    await deaf.load();
    const saved = await call<AgentDetail>(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, {
      source: agentSource('standup-notes', 'Write standup notes. STANDUP-ONE'),
    });
    expect(saved.status).toBe(201);
    const first = await deaf.forProject(acme.alpha, 'standup-notes');
    expect([first?.version, first?.entry.manifest.name]).toEqual(['1', 'standup-notes']);
    expect(await deaf.forProject(globex.project, 'standup-notes')).toBeUndefined();

    await call(a.url, tokens.olivia!, 'PUT', '/agents/standup-notes', {
      source: agentSource('standup-notes', 'Write standup notes. STANDUP-TWO'),
    });
    expect((await deaf.forProject(acme.alpha, 'standup-notes'))?.version).toBe('2');
    expect((await deaf.resolve(API_TOKEN_ADMIN, 'standup-notes')).version).toBe('2');

    await call(a.url, tokens.olivia!, 'DELETE', '/agents/standup-notes');
    expect(await deaf.forProject(acme.alpha, 'standup-notes')).toBeUndefined();
  });

  it('finishes a run waiting at its gate on the version it started with, after a version without that gate', async () => {
    await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, {
      source: agentSource('changes-digest', 'Digest the changes. DIGEST-V1'),
    });
    ctx.model.reply(['digest ']);
    const waiting = await run(a.url, tokens.olivia!, 'changes-digest', { project_id: acme.alpha });
    expect(types(waiting.events).at(-1)).toBe('gate_waiting');

    // Version 2 is a command: dispatch, execute, summarize, and no gate at all.
    const v2 = await call<AgentDetail>(a.url, tokens.olivia!, 'PUT', '/agents/changes-digest', {
      source: commandSource('changes-digest', 'Digest the changes. DIGEST-V2'),
      note: 'no approval needed',
    });
    expect(v2.body).toMatchObject({ version: '2', kind: 'command' });

    const headers = { authorization: `Bearer ${tokens.olivia}` };
    const approved = await followAccepted(
      await fetch(`${b.url}/threads/${waiting.threadId}/gates/gate/approve`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: '{}',
      }),
      (path) => fetch(`${b.url}${path}`, { headers }),
    );
    const resumed = await readEvents(approved);
    expect(types(resumed)).toContain('gate_approved');
    expect(nodesEntered(resumed)).toEqual(['output']);
    expect(types(resumed).at(-1)).toBe('run_done');
    const decisions = await call<RunDetail>(a.url, tokens.olivia!, 'GET', `/runs/${waiting.runId}`);
    expect(decisions.body.agent_version).toBe('1');
    expect(decisions.body.decisions[0]).toMatchObject({ decision: 'approve', agent_version: '1' });

    const fresh = await run(a.url, tokens.olivia!, 'changes-digest', { project_id: acme.alpha });
    expect(fresh.version).toBe('2');
    expect(nodesEntered(fresh.events)).toEqual(['dispatch', 'execute', 'summarize']);
  });

  it('refuses a source with problems, each at its line and field, saving nothing; validateAgent says the same', async () => {
    const source = [
      '---',
      'name: broken-notes',
      'description: Has three problems',
      'colour: red',
      'phases:',
      '  review:',
      '    description: not a node of the default agent graph',
      'tools:',
      '  policies:',
      '    nodot: allow',
      '---',
      'Write notes.',
    ].join('\n');
    const refused = await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, { source });
    expect(refused.status).toBe(400);
    const expected = [
      { line: 4, field: 'colour' },
      { line: 6, field: 'phases.review' },
      { line: 10, field: 'tools.policies.nodot' },
    ];
    expect(refused.body.error!.details!.problems).toMatchObject(expected);
    expect((await call(a.url, tokens.olivia!, 'GET', '/agents/broken-notes')).status).toBe(404);

    const checked = await call<AgentValidation>(a.url, tokens.vera!, 'POST', '/agents/validate', { source });
    expect(checked.status).toBe(200);
    expect(checked.body).toMatchObject({ valid: false, graph: null });
    expect(checked.body.problems).toEqual(refused.body.error!.details!.problems);
    expect((await call(a.url, tokens.olivia!, 'GET', '/agents/broken-notes')).status).toBe(404);
  });
});

describe('who may do what with a stored agent', () => {
  it('lets a member run but not create, a viewer read, and another organisation see nothing', async () => {
    const source = agentSource('team-notes', 'Team notes.');
    const byMember = await call(a.url, tokens.max!, 'POST', `/projects/${acme.alpha}/agents`, { source });
    expect(byMember.status).toBe(403);
    const created = await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, { source });
    expect(created.status).toBe(201);
    expect((await call(a.url, tokens.max!, 'PUT', '/agents/team-notes', { source })).status).toBe(403);
    expect((await call(a.url, tokens.vera!, 'GET', '/agents/team-notes')).status).toBe(200);

    ctx.model.reply(['ok ']);
    const ran = await run(a.url, tokens.max!, 'team-notes', { project_id: acme.alpha });
    expect(types(ran.events).at(-1)).toBe('gate_waiting');

    expect((await call(a.url, tokens.gus!, 'GET', '/agents/team-notes')).status).toBe(404);
    const listed = await call<AssetSummary[]>(a.url, tokens.gus!, 'GET', '/agents');
    expect(listed.body.map((agent) => agent.name)).not.toContain('team-notes');
    // Another organisation may use the name: it says nothing about the first one's.
    const theirs = await call(a.url, tokens.gus!, 'POST', `/projects/${globex.project}/agents`, { source });
    expect(theirs.status).toBe(201);
    // In its own organisation the name is taken, in any project.
    const again = await call(a.url, API_TOKEN, 'POST', `/projects/${acme.beta}/agents`, { source });
    expect(again.status).toBe(409);
  });

  it('refuses a program to start and environment variables to read, each with its rule, and takes a registered server', async () => {
    const declaring = (servers: string) =>
      agentSource('tooling-notes', 'Use the tools.', `tools:\n  servers:\n${servers}`);
    const program = await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, {
      source: declaring('    files:\n      command: /bin/sh\n      args: ["-c", "cat /etc/passwd"]\n'),
    });
    expect(program.status).toBe(400);
    expect(program.body.error!.details!.problems[0]!.message).toMatch(/stored agent cannot start a program/);
    const variable = await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, {
      source: declaring(
        '    api:\n      url: https://tools.example.com/mcp\n      headers:\n        Authorization: SVC_TOKEN\n',
      ),
    });
    expect(variable.status).toBe(400);
    expect(variable.body.error!.details!.problems[0]!.message).toMatch(/names no environment variable/);

    const registered = await call(a.url, API_TOKEN, 'PUT', '/mcp-servers/filesystem', {
      command: 'mcp-server-filesystem',
      args: ['{project_path}'],
    });
    expect(registered.status).toBe(200);
    const naming = await call<AgentDetail>(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, {
      source: declaring('    files:\n      registry: filesystem\n'),
    });
    expect(naming.status).toBe(201);
  });
});

describe('other doors see stored agents', () => {
  it("lists them as LangGraph assistants with their versions, and in MCP's list_agents", async () => {
    const source = (prompt: string) => agentSource('door-notes', prompt);
    await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, {
      source: source('One.'),
      note: 'one',
    });
    await call(a.url, tokens.olivia!, 'PUT', '/agents/door-notes', { source: source('Two.'), note: 'two' });

    const lg = new Client({ apiUrl: `${b.url}/lg`, apiKey: tokens.olivia! });
    const [assistant] = await lg.assistants.search({ graphId: 'door-notes' });
    expect(assistant).toMatchObject({ graph_id: 'door-notes', version: 2 });
    const versions = await lg.assistants.getVersions(assistant!.assistant_id);
    expect(versions.map((v) => [v.version, v.metadata?.note])).toEqual([
      [2, 'two'],
      [1, 'one'],
    ]);
    // Another organisation's assistants do not include it.
    const theirs = new Client({ apiUrl: `${b.url}/lg`, apiKey: tokens.gus! });
    expect((await theirs.assistants.search({ limit: 100 })).map((x) => x.graph_id)).not.toContain('door-notes');
    // Making version 1 current again saves its text as version 3.
    const latest = await lg.assistants.setLatest(assistant!.assistant_id, 1);
    expect(latest.version).toBe(3);
    const restored = await call<{ source: string }>(a.url, tokens.olivia!, 'GET', '/agents/door-notes/versions/3');
    expect(restored.body.source).toContain('One.');

    const mcp = await connectMcp(b.url, tokens.max!);
    try {
      const listed = (await mcp.call('list_agents')).structuredContent as { agents: { name: string }[] };
      expect(listed.agents.map((agent) => agent.name)).toContain('door-notes');
    } finally {
      await mcp.close();
    }
    const outsider = await connectMcp(b.url, tokens.gus!);
    try {
      const listed = (await outsider.call('list_agents')).structuredContent as { agents: { name: string }[] };
      expect(listed.agents.map((agent) => agent.name)).not.toContain('door-notes');
    } finally {
      await outsider.close();
    }
  });
});

describe('deleting a stored agent', () => {
  it('keeps its runs readable, frees its name and pauses its schedules saying why', async () => {
    const source = agentSource('weekly-notes', 'Weekly notes.');
    await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, { source });
    ctx.model.reply(['week ']);
    const ran = await run(a.url, tokens.olivia!, 'weekly-notes', { project_id: acme.alpha });
    const schedule = await call<{ id: string }>(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/schedules`, {
      agent: 'weekly-notes',
      cron: '0 9 * * 1',
      timezone: 'UTC',
      message: 'the week',
    });
    expect(schedule.status).toBe(201);

    expect((await call(a.url, tokens.max!, 'DELETE', '/agents/weekly-notes')).status).toBe(403);
    expect((await call(a.url, tokens.olivia!, 'DELETE', '/agents/weekly-notes')).status).toBe(204);
    expect((await call(b.url, tokens.olivia!, 'GET', '/agents/weekly-notes')).status).toBe(404);
    const paused = await call<{ paused_at: string | null; paused_reason: string | null }>(
      a.url,
      tokens.olivia!,
      'GET',
      `/schedules/${schedule.body.id}`,
    );
    expect(paused.body.paused_at).not.toBeNull();
    expect(paused.body.paused_reason).toBe('paused: the agent "weekly-notes" it runs was deleted by olivia');
    const detail = await call<RunDetail>(a.url, tokens.olivia!, 'GET', `/runs/${ran.runId}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ agent: 'weekly-notes', agent_version: '1' });
    // The name is free again in the organisation.
    expect((await call(a.url, tokens.olivia!, 'POST', `/projects/${acme.alpha}/agents`, { source })).status).toBe(201);
  });
});
