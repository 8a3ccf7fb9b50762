import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID, DEFAULT_TEAM_ID } from '../../src-server/contracts/tenancy';
import { SESSION_ISSUER } from '../../src-server/auth/authenticator';
import type { Manifest } from '../../src-server/contracts/assets';
import { reviewAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';
import { addUser, grantRole, signSession } from '../helpers/sessions';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SECRET = 'a-session-secret-for-tests-only-0123456789';
const API_TOKEN = 'instance-admin-token-0123456789';
type Who = 'admin' | 'owner' | 'member' | 'viewer' | 'outsider' | 'none';

const ctx = useIntegrationServer({ server: false });

/**
 * The review agent whose intake may write one file of its project: write_file asks, and with no policy naming it a
 * member decides (the default). One call at most, so the phase's next turn offers no tools and takes no scripted call.
 */
const writerAgent: Manifest = {
  ...reviewAgent,
  name: 'writer',
  source: 'assets/agents/writer.md',
  phases: reviewAgent.phases.map((p) =>
    p.id === 'intake' ? { ...p, tools: { tools: ['project.write_file'], max_tool_calls: 1 } } : p,
  ),
};
/** The fixture catalog with the writer. */
let catalog: string;
/**
 * PROJECT_ROOTS of the matrix's servers: the writer's runs work in the folder of their world (the second
 * organisation's registered to it), and the folder rows register folders of their own beside them.
 */
const roots = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'access-matrix-')));
const ROOTS = { PROJECT_ROOTS: roots };
const worldFolder = (w: World) => path.join(roots, w.name);
let folders = 0;
const newFolder = () => {
  const folder = path.join(roots, `folder-${++folders}`);
  fs.mkdirSync(folder);
  return folder;
};
beforeAll(async () => {
  catalog = await writeFixtureCatalog([writerAgent]);
  for (const name of ['default', 'second']) fs.mkdirSync(path.join(roots, name));
});
afterAll(() => {
  fs.rmSync(roots, { recursive: true, force: true });
  if (catalog) fs.rmSync(catalog, { recursive: true, force: true });
});

const sign = (sub: string, secret = SECRET, expiresIn: string | number = '1h') => signSession(sub, secret, expiresIn);

async function user(server: TestServer, role: Exclude<Who, 'outsider' | 'none'> | null): Promise<string> {
  const id = await newUser(server, role ?? 'outsider');
  if (role) await grant(server, id, 'org', DEFAULT_ORG_ID, role);
  return id;
}

const newUser = (server: TestServer, name: string) => addUser(server.pool, name);
const grant = (server: TestServer, userId: string, level: Level, scopeId: string, role: Role) =>
  grantRole(server.pool, userId, level, scopeId, role);

/** A gated and a finished run, started by the instance admin (the API token, or anyone with auth off). */
async function fixtures(server: TestServer, projectId?: string) {
  const json = (message: string) => ({ message, ...(projectId ? { project_id: projectId } : {}) });
  ctx.model.reply(['fine']);
  const gateEvents = await readEvents(
    await server.request('/graphs/review/run', { method: 'POST', json: json('to the gate') }),
  );
  const gated = gateEvents[0]!.data as { run_id: string; thread_id: string };
  const done = await readEvents(
    await server.request('/graphs/summary/run', { method: 'POST', json: json('finished') }),
  );
  const finished = done[0]!.data as { run_id: string; thread_id: string };
  return { gated, finished };
}

type Level = 'org' | 'team' | 'project';
type Role = 'admin' | 'owner' | 'member' | 'viewer';
const LEVELS: Level[] = ['org', 'team', 'project'];
const RANK: Role[] = ['viewer', 'member', 'owner', 'admin'];

/** An organisation with one team and one project: the default one, or one an instance admin created. */
interface World {
  name: 'default' | 'second';
  org: string;
  team: string;
  project: string;
  /** A finished run in the world's project, for the rows that only read. */
  finished: { run_id: string; thread_id: string };
  /** A dataset of the world's project with one item, and two experiments of it, for the rows that only read. */
  dataset: { id: string; experiment: string; other: string };
}

/** Objects a row acts on that its call may use up: made again for every caller. */
interface Fresh {
  gated?: { run_id: string; thread_id: string };
  /** A checkpoint of `gated`'s thread to run from, once that run has ended. */
  checkpoint?: string;
  thread?: string;
  team?: string;
  project?: string;
  org?: string;
  /** A user with a viewer role on the world's organisation, team and project, to manage as a member. */
  victim?: string;
  /** A webhook of the world's project. */
  webhook?: string;
  /** A schedule of the world's project, made by the instance admin (so no caller of the matrix is its maker). */
  schedule?: string;
  /** The tool call `gated`'s run waits at. */
  toolCall?: string;
  /** The id of the stop `gated`'s run waits at (contracts/stops.ts). */
  stop?: string;
  /** A tool grant on `gated`'s thread. */
  grant?: string;
  /** A model pull the instance admin started. */
  pull?: string;
  /** A folder under PROJECT_ROOTS, registered to no organisation. */
  folderPath?: string;
  /** A folder registered to the world's organisation. */
  folder?: string;
  /** A stored agent of the world's project, made by the instance admin; or a name for one to make. */
  agent?: string;
  /** A dataset of the world's project with one item typed by hand, made by the instance admin. */
  dataset?: { id: string; item: string };
  /** A monthly budget of the world's project, set by the instance admin. */
  budget?: string;
  /** The world's finished thread as an export document, for a row that imports it. */
  exported?: unknown;
}

/** Who calls: a role held at one level of one world, a user with no role, another world's admin, no token. */
interface Caller {
  label: string;
  id: string;
  token: string | null;
  world?: World['name'];
  level?: Level;
  role?: Role;
}

/**
 * Who may call a row: everyone (public); anyone with a token (signed); nobody but instance administrators
 * (instance); or at least `min` on the scope concerned, a role held there or above counting (role). With
 * `inside`, any role inside the organisation is enough to read, and a role below `min` on it answers 403.
 */
type Rule =
  | { kind: 'public'; status: number | 'same' }
  | { kind: 'signed'; status: number }
  | { kind: 'instance' }
  | { kind: 'role'; scope: Level | 'default-org'; min: Role; ok: number; inside?: boolean };

interface Row {
  name: string;
  method: string;
  path: (w: World, f: Fresh) => string;
  body?: (w: World, f: Fresh) => unknown;
  rule: Rule;
  fresh?: (server: TestServer, w: World, caller: Caller) => Promise<Fresh>;
  /** A row about the default organisation's fixed scopes only. */
  only?: World['name'];
}

const role = (scope: Level | 'default-org', min: Role, ok: number, inside = false): Rule => ({
  kind: 'role',
  scope,
  min,
  ok,
  inside,
});
const row = (
  method: string,
  name: string,
  path: Row['path'],
  rule: Rule,
  extra: Partial<Pick<Row, 'body' | 'fresh' | 'only'>> = {},
): Row => ({ method, name, path, rule, ...extra });

/** The caller's role on the scope concerned: one held there or above it counts, one below it does not. */
function heldOn(caller: Caller, w: World, scope: Level | 'default-org'): Role | null {
  if (!caller.level || !caller.role) return null;
  // The default organisation's own rows (the queue) concern its members wherever the row is run.
  if (scope === 'default-org') return caller.world === 'default' && caller.level === 'org' ? caller.role : null;
  if (caller.world !== w.name) return null;
  return LEVELS.indexOf(caller.level) <= LEVELS.indexOf(scope) ? caller.role : null;
}

function expected(row: Row, caller: Caller, w: World): number {
  const { rule } = row;
  if (rule.kind === 'public') return rule.status === 'same' ? -1 : rule.status;
  if (caller.token === null) return 401;
  if (rule.kind === 'signed') return rule.status;
  if (rule.kind === 'instance') return 403;
  const held = heldOn(caller, w, rule.scope);
  if (held === null) {
    const inside = rule.inside && caller.world === w.name && caller.role !== undefined;
    if (!inside) return 404;
    return rule.min === 'viewer' ? rule.ok : 403;
  }
  return RANK.indexOf(held) >= RANK.indexOf(rule.min) ? rule.ok : 403;
}

const gatedRun = (server: TestServer, w: World): Promise<Fresh> =>
  fixtures(server, w.project).then(({ gated }) => ({ gated }));
/** A run waiting at its gate, by its stop's id as the run detail gives it. */
const gatedStop = async (server: TestServer, w: World): Promise<Fresh> => {
  const { gated } = await gatedRun(server, w);
  const detail = (await (await server.request(`/runs/${gated!.run_id}`)).json()) as { stop: { id: string } };
  return { gated, stop: detail.stop.id };
};
/** A run rejected at its gate, and a checkpoint of its thread to start a new run from. */
const forkable = async (server: TestServer, w: World): Promise<Fresh> => {
  const { gated } = await gatedRun(server, w);
  const res = await server.request(`/threads/${gated!.thread_id}/gates/gate/reject`, { method: 'POST', json: {} });
  await readEvents(await server.request(((await res.json()) as { stream_url: string }).stream_url));
  const list = await server.request(`/threads/${gated!.thread_id}/checkpoints`);
  return { gated, checkpoint: ((await list.json()) as { checkpoint_id: string }[])[1]!.checkpoint_id };
};
const agentSource = (name: string, prompt = 'Write notes.') =>
  `---\nname: ${name}\ndescription: An agent of the matrix\n---\n${prompt}\n`;
const agentName = () => `matrix-${Math.random().toString(36).slice(2, 10)}`;
const freshAgent = async (server: TestServer, w: World): Promise<Fresh> => {
  const agent = agentName();
  const res = await server.request(`/projects/${w.project}/agents`, {
    method: 'POST',
    json: { source: agentSource(agent) },
  });
  if (res.status !== 201) throw new Error(`making the matrix's agent failed: ${res.status} ${await res.text()}`);
  return { agent };
};
/** The world's finished thread exported by the instance admin: a document to import. */
const exportedThread = async (server: TestServer, w: World): Promise<Fresh> => {
  const res = await server.request(`/threads/${w.finished.thread_id}/export`);
  expect(res.status).toBe(200);
  return { exported: await res.json() };
};
const freshThread = async (server: TestServer, w: World): Promise<Fresh> => {
  const res = await server.request('/threads', { method: 'POST', json: { agent: 'summary', project_id: w.project } });
  return { thread: ((await res.json()) as { id: string }).id };
};
const freshScope = async (server: TestServer, type: Level, parent: string | null): Promise<string> => {
  const path = { org: '/orgs', team: '/teams', project: '/projects' }[type];
  const json = { name: `fresh ${type}`, ...(parent ? { parent_id: parent } : {}) };
  return ((await (await server.request(path, { method: 'POST', json })).json()) as { id: string }).id;
};
/** An organisation with one team and one project in it, made by the instance admin. */
const freshOrg = async (server: TestServer): Promise<Record<Level, string>> => {
  const org = await freshScope(server, 'org', null);
  const team = await freshScope(server, 'team', org);
  return { org, team, project: await freshScope(server, 'project', team) };
};
/** A new organisation where the caller holds the same role at the same level as in the world. */
const mirroredOrg = async (server: TestServer, w: World, caller: Caller): Promise<Fresh> => {
  const ids = await freshOrg(server);
  if (caller.level && caller.role && caller.world === w.name) {
    await grant(server, caller.id, caller.level, ids[caller.level], caller.role);
  }
  return { org: ids.org };
};
/**
 * Webhooks of the matrix go to a documentation address (RFC 5737, passes the address check, reaches nothing) and
 * report only failed runs, which the matrix has none of: nothing is sent.
 */
const WEBHOOK = { url: 'https://192.0.2.10/matrix', events: ['run.failed'] };
/**
 * Two rows register a fresh webhook on the world's project for each of their callers, in both matrices on one
 * database: more than the 20 a project may have by default, a limit the webhook tests check. Seven rows make a fresh
 * schedule the same way, all as the API token's administrator: more than the 50 one person may run, and the 200 one
 * project may have, by default, limits the schedule tests check.
 */
const LIMITS_ROOM = {
  WEBHOOK_MAX_PER_SCOPE: '200',
  SCHEDULES_MAX_PER_USER: '1000',
  SCHEDULES_MAX_PER_PROJECT: '1000',
};
const freshWebhook = async (server: TestServer, w: World): Promise<Fresh> => {
  const res = await server.request('/webhooks', { method: 'POST', json: { ...WEBHOOK, project_id: w.project } });
  return { webhook: ((await res.json()) as { id: string }).id };
};
/** A schedule that fires once a year: the matrix reads and changes it, and nothing runs on its own meanwhile. */
const SCHEDULE = { agent: 'summary', cron: '0 0 1 1 *', timezone: 'UTC', message: 'matrix schedule' };
/** A dataset of the world's project, made by the instance admin, and the item typed into it. */
const freshDataset = async (server: TestServer, w: World): Promise<Fresh> => {
  const res = await server.request(`/projects/${w.project}/datasets`, { method: 'POST', json: { name: 'matrix' } });
  const id = ((await res.json()) as { id: string }).id;
  const added = await server.request(`/datasets/${id}/items`, { method: 'POST', json: { message: 'matrix item' } });
  return { dataset: { id, item: ((await added.json()) as { id: string }).id } };
};
/** The world's dataset, and two experiments of it by the instance admin (which go on in the background). */
async function datasetOf(server: TestServer, project: string): Promise<World['dataset']> {
  const { dataset } = await freshDataset(server, { project } as World);
  const experiment = async () => {
    const res = await server.request(`/datasets/${dataset!.id}/experiments`, {
      method: 'POST',
      json: { agent: 'summary', model: 'fake-model' },
    });
    return ((await res.json()) as { id: string }).id;
  };
  return { id: dataset!.id, experiment: await experiment(), other: await experiment() };
}
const freshSchedule = async (server: TestServer, w: World): Promise<Fresh> => {
  const res = await server.request(`/projects/${w.project}/schedules`, { method: 'POST', json: SCHEDULE });
  return { schedule: ((await res.json()) as { id: string }).id };
};
/** A folder registered to the world's organisation by the instance admin. */
const freshFolder = async (server: TestServer, w: World): Promise<Fresh> => {
  const res = await server.request(`/orgs/${w.org}/folders`, { method: 'POST', json: { path: newFolder() } });
  expect(res.status).toBe(201);
  return { folder: ((await res.json()) as { id: string }).id };
};
/** A monthly budget of the world's project, set by the instance admin (far above anything the matrix spends). */
const freshBudget = async (server: TestServer, w: World): Promise<Fresh> => {
  const res = await server.request(`/projects/${w.project}/budget`, {
    method: 'PUT',
    json: { period: 'month', tokens: 1e12 },
  });
  expect(res.status).toBe(200);
  return { budget: ((await res.json()) as { id: string }).id };
};
/** A secret of the world's project or organisation, set by the instance admin, for a row that deletes it. */
const freshSecret =
  (scope: 'projects' | 'orgs') =>
  async (server: TestServer, w: World): Promise<Fresh> => {
    const id = scope === 'projects' ? w.project : w.org;
    const res = await server.request(`/${scope}/${id}/secrets/MATRIX_GONE`, { method: 'PUT', json: { value: 'x' } });
    expect(res.status).toBe(200);
    return {};
  };
/** A pull of a model from the runtime, started by the instance admin: a model of its own, not pulled already. */
let pulls = 0;
const freshPull = async (server: TestServer): Promise<Fresh> => {
  const res = await server.request('/models/local/pulls', { method: 'POST', json: { name: `matrix-${++pulls}:1b` } });
  expect(res.status).toBe(202);
  return { pull: ((await res.json()) as { id: string }).id };
};
/** A run of the writer in the world's project, stopped at its write_file call. */
const toolCallRun = async (server: TestServer, w: World): Promise<Fresh> => {
  ctx.model.toolTurns = [[{ name: 'project__write_file', arguments: { path: 'notes.md', content: 'matrix' } }]];
  const events = await readEvents(
    await server.request('/graphs/writer/run', {
      method: 'POST',
      json: { message: 'write it down', project_id: w.project, project_path: worldFolder(w) },
    }),
  );
  const waiting = events.at(-1)!.data as { type: string; tool_call?: { call_id: string } };
  expect(waiting.type).toBe('tool_waiting');
  return { gated: events[0]!.data as { run_id: string; thread_id: string }, toolCall: waiting.tool_call!.call_id };
};
/** A grant on a thread: its write_file call approved for the rest of the thread, the run then at its gate. */
const toolGrant = async (server: TestServer, w: World): Promise<Fresh> => {
  const { gated, toolCall } = await toolCallRun(server, w);
  const decided = await server.request(`/threads/${gated!.thread_id}/tool-calls/${toolCall}/approve`, {
    method: 'POST',
    json: { allow_for_thread: true },
  });
  await readEvents(await server.request(((await decided.json()) as { stream_url: string }).stream_url));
  const grants = (await (await server.request(`/threads/${gated!.thread_id}/tool-grants`)).json()) as { id: string }[];
  return { gated, grant: grants[0]!.id };
};
const victim = async (server: TestServer, w: World): Promise<Fresh> => {
  const id = await newUser(server, 'victim');
  for (const level of LEVELS) await grant(server, id, level, w[level], 'viewer');
  return { victim: id };
};

/** Listing, setting and removing members, per scope: project owners manage a project's, admins the others'. */
const MEMBER_ROWS: Row[] = (
  [
    ['project', 'projects', 'owner', 'a project'],
    ['team', 'teams', 'admin', 'a team'],
    ['org', 'orgs', 'admin', 'an organisation'],
  ] as const
).flatMap(([scope, path, min, what]) => [
  row('GET', `list ${what}'s members`, (w) => `/${path}/${w[scope]}/members`, role(scope, 'viewer', 200)),
  row('PUT', `set ${what} member`, (w, f) => `/${path}/${w[scope]}/members/${f.victim}`, role(scope, min, 200), {
    body: () => ({ role: 'member' }),
    fresh: victim,
  }),
  row('DELETE', `remove ${what} member`, (w, f) => `/${path}/${w[scope]}/members/${f.victim}`, role(scope, min, 204), {
    fresh: victim,
  }),
]);

/** The whole matrix (endpoint × role); docs/http-api.md's "Access control" table says the same in words. */
const MATRIX: Row[] = [
  ...(
    [
      ['/health', 200],
      ['/', 200],
      // 200 once the studio is built, 503 before: public either way, the same answer with a token or without.
      ['/ui', 'same'],
      ['/docs', 200],
      ['/openapi.json', 200],
      // Without OIDC configured there is nothing to sign in with: the same 404 for everyone.
      ['/auth/login', 404],
      // A callback without a pending sign-in is refused the same way for everyone.
      ['/auth/callback', 400],
      // What a 401 from /mcp points an MCP client to, and the same for the server as a whole.
      ['/.well-known/oauth-protected-resource/mcp', 200],
      ['/.well-known/oauth-protected-resource', 200],
      // Without OIDC there is no authorization server for MCP clients: the same 404 for everyone.
      ['/.well-known/oauth-authorization-server', 404],
    ] as const
  ).map(([path, status]) => row('GET', `public ${path}`, () => path, { kind: 'public', status })),
  ...[
    '/agents',
    '/commands',
    '/models',
    // Everyone sees the runtime's models; managing them is the instance administrator's (rows below).
    '/models/local',
    '/queue/status',
    '/auth/me',
    '/threads',
    '/orgs',
    '/teams',
    '/projects',
    // Each caller's own inbox: the gates she may decide (test/runs/approvals.int.test.ts checks what it lists).
    '/approvals',
    // The spend each caller may see: her own, and all of the projects she owns (test/usage/usage.int.test.ts).
    '/usage',
  ].map((path) => row('GET', `any signed-in caller: ${path}`, () => path, { kind: 'signed', status: 200 })),
  row('POST', 'queue reset', () => '/queue/reset', role('default-org', 'owner', 200), { body: () => ({}) }),
  row('GET', 'read a thread', (w) => `/threads/${w.finished.thread_id}`, role('project', 'viewer', 200)),
  row('GET', 'run history', (w) => `/threads/${w.finished.thread_id}/runs`, role('project', 'viewer', 200)),
  row('GET', 'run detail', (w) => `/runs/${w.finished.run_id}`, role('project', 'viewer', 200)),
  row('GET', 'follow a run', (w) => `/runs/${w.finished.run_id}/stream`, role('project', 'viewer', 200)),
  row('GET', 'wait for a run', (w) => `/runs/${w.finished.run_id}/wait?timeout_s=1`, role('project', 'viewer', 200)),
  row('GET', 'checkpoints', (w) => `/threads/${w.finished.thread_id}/checkpoints`, role('project', 'viewer', 200)),
  row('GET', 'export a thread', (w) => `/threads/${w.finished.thread_id}/export`, role('project', 'viewer', 200)),
  row('POST', 'import a thread', (w) => `/projects/${w.project}/threads/import`, role('project', 'member', 201), {
    body: (_w, f) => f.exported,
    fresh: exportedThread,
  }),
  row('GET', "a project's usage", (w) => `/usage?project_id=${w.project}`, role('project', 'viewer', 200)),
  row('GET', "an organisation's usage", (w) => `/usage?org_id=${w.org}`, role('org', 'viewer', 200, true)),
  row(
    'POST',
    'run from a checkpoint',
    (_w, f) => `/threads/${f.gated!.thread_id}/checkpoints/${f.checkpoint}/run`,
    role('project', 'member', 200),
    { body: () => ({ message: 'from here' }), fresh: forkable },
  ),
  row(
    'POST',
    'start a run from a checkpoint as JSON',
    (_w, f) => `/threads/${f.gated!.thread_id}/checkpoints/${f.checkpoint}/runs`,
    role('project', 'member', 202),
    { body: () => ({ message: 'from here' }), fresh: forkable },
  ),
  row('POST', 'a stream token', (w) => `/runs/${w.finished.run_id}/stream-token`, role('project', 'viewer', 200)),
  row(
    'GET',
    "graph definition with the project's overrides",
    (w) => `/agents/review/graph-definition?project_id=${w.project}`,
    role('project', 'viewer', 200),
  ),
  row(
    'GET',
    "a project's node config",
    (w) => `/agents/review/nodes/analysis/config?project_id=${w.project}`,
    role('project', 'viewer', 200),
  ),
  row(
    'PUT',
    "save a project's node config",
    (w) => `/agents/review/nodes/analysis/config?project_id=${w.project}`,
    role('project', 'owner', 200),
    { body: () => ({ notes: 'matrix' }) },
  ),
  row(
    'GET',
    "graph definition with the organisation's overrides",
    (w) => `/agents/review/graph-definition?org_id=${w.org}`,
    role('org', 'viewer', 200, true),
  ),
  row(
    'GET',
    "an organisation's node config",
    (w) => `/agents/review/nodes/analysis/config?org_id=${w.org}`,
    role('org', 'viewer', 200, true),
  ),
  row(
    'PUT',
    "save an organisation's node config",
    (w) => `/agents/review/nodes/analysis/config?org_id=${w.org}`,
    role('org', 'owner', 200, true),
    { body: () => ({ notes: 'matrix' }) },
  ),
  ...(
    [
      ['a project', 'project_id', role('project', 'owner', 204)],
      ['an organisation', 'org_id', role('org', 'owner', 204, true)],
    ] as const
  ).map(([what, param, rule]) => {
    const path = (w: World) =>
      `/agents/review/nodes/analysis/config?${param}=${param === 'org_id' ? w.org : w.project}`;
    // Something to remove, saved by the instance admin before each call.
    const fresh = async (server: TestServer, w: World) => {
      await server.request(path(w), { method: 'PUT', json: { notes: 'to remove' } });
      return {};
    };
    return row('DELETE', `remove ${what}'s node config`, path, rule, { fresh });
  }),
  row('POST', 'run an agent', () => '/graphs/summary/run', role('project', 'member', 200), {
    body: (w) => ({ message: 'matrix run', project_id: w.project }),
  }),
  row('POST', 'start a run as JSON', () => '/agents/summary/runs', role('project', 'member', 202), {
    body: (w) => ({ message: 'matrix run', project_id: w.project }),
  }),
  row('POST', 'create a thread', () => '/threads', role('project', 'member', 201), {
    body: (w) => ({ agent: 'summary', project_id: w.project }),
  }),
  row('PATCH', 'rename a thread', (w) => `/threads/${w.finished.thread_id}`, role('project', 'member', 200), {
    body: () => ({ name: 'renamed by the matrix' }),
  }),
  row('DELETE', 'delete a thread', (_w, f) => `/threads/${f.thread}`, role('project', 'member', 204), {
    fresh: freshThread,
  }),
  ...(['approve', 'reject'] as const).map((decision) =>
    row(
      'POST',
      `${decision} a gate`,
      (_w, f) => `/threads/${f.gated!.thread_id}/gates/gate/${decision}`,
      role('project', 'member', 202),
      {
        body: () => ({ reason: 'matrix' }),
        fresh: gatedRun,
      },
    ),
  ),
  row('POST', 'decide a stop by its id', (_w, f) => `/stops/${f.stop}/decision`, role('project', 'member', 202), {
    body: () => ({ decision: 'approve', round: 1, reason: 'matrix' }),
    fresh: gatedStop,
  }),
  row(
    'POST',
    'respond to a gate',
    (_w, f) => `/threads/${f.gated!.thread_id}/gates/gate/respond`,
    role('project', 'member', 202),
    { body: () => ({ response: 'matrix feedback' }), fresh: gatedRun },
  ),
  ...(
    [
      ['approve', 'approve a tool call', { reason: 'matrix' }],
      ['reject', 'reject a tool call', { reason: 'matrix' }],
      ['respond', 'respond to a tool call', { response: 'written elsewhere' }],
    ] as const
  ).map(([decision, name, body]) =>
    row(
      'POST',
      name,
      (_w, f) => `/threads/${f.gated!.thread_id}/tool-calls/${f.toolCall}/${decision}`,
      role('project', 'member', 202),
      { body: () => body, fresh: toolCallRun },
    ),
  ),
  row(
    'GET',
    "a thread's tool grants",
    (w) => `/threads/${w.finished.thread_id}/tool-grants`,
    role('project', 'viewer', 200),
  ),
  row(
    'POST',
    'revoke a tool grant',
    (_w, f) => `/threads/${f.gated!.thread_id}/tool-grants/${f.grant}/revoke`,
    role('project', 'member', 200),
    { fresh: toolGrant },
  ),
  row(
    'GET',
    "a thread's gate decisions",
    (w) => `/threads/${w.finished.thread_id}/decisions`,
    role('project', 'viewer', 200),
  ),
  row('POST', 'compare a run', (w) => `/runs/${w.finished.run_id}/compare`, role('project', 'member', 202), {
    body: () => ({}),
  }),
  row('GET', "a project's datasets", (w) => `/projects/${w.project}/datasets`, role('project', 'viewer', 200)),
  row('POST', 'make a dataset', (w) => `/projects/${w.project}/datasets`, role('project', 'member', 201), {
    body: () => ({ name: 'made by the matrix' }),
  }),
  row('GET', 'read a dataset', (w) => `/datasets/${w.dataset.id}`, role('project', 'viewer', 200)),
  row('DELETE', 'delete a dataset', (_w, f) => `/datasets/${f.dataset!.id}`, role('project', 'member', 204), {
    fresh: freshDataset,
  }),
  row('POST', 'add a dataset item', (_w, f) => `/datasets/${f.dataset!.id}/items`, role('project', 'member', 201), {
    body: () => ({ message: 'typed by the matrix' }),
    fresh: freshDataset,
  }),
  row(
    'PATCH',
    'change a dataset item',
    (_w, f) => `/datasets/${f.dataset!.id}/items/${f.dataset!.item}`,
    role('project', 'member', 200),
    { body: () => ({ expected: 'a summary' }), fresh: freshDataset },
  ),
  row(
    'DELETE',
    'delete a dataset item',
    (_w, f) => `/datasets/${f.dataset!.id}/items/${f.dataset!.item}`,
    role('project', 'member', 204),
    { fresh: freshDataset },
  ),
  row('POST', 'run an experiment', (w) => `/datasets/${w.dataset.id}/experiments`, role('project', 'member', 202), {
    body: () => ({ agent: 'summary', model: 'fake-model' }),
  }),
  row('GET', "a dataset's experiments", (w) => `/datasets/${w.dataset.id}/experiments`, role('project', 'viewer', 200)),
  row('GET', 'read an experiment', (w) => `/experiments/${w.dataset.experiment}`, role('project', 'viewer', 200)),
  row(
    'GET',
    'compare two experiments',
    (w) => `/experiments/${w.dataset.experiment}/comparison/${w.dataset.other}`,
    role('project', 'viewer', 200),
  ),
  row('POST', 'cancel a run', (_w, f) => `/runs/${f.gated!.run_id}/cancel`, role('project', 'member', 200), {
    body: () => ({}),
    fresh: gatedRun,
  }),
  ...MEMBER_ROWS,
  row('GET', "an organisation's folders", (w) => `/orgs/${w.org}/folders`, role('org', 'viewer', 200, true)),
  row('POST', 'register a folder', (w) => `/orgs/${w.org}/folders`, role('org', 'admin', 201, true), {
    body: (_w, f) => ({ path: f.folderPath }),
    fresh: async () => ({ folderPath: newFolder() }),
  }),
  row('DELETE', 'remove a folder', (w, f) => `/orgs/${w.org}/folders/${f.folder}`, role('org', 'admin', 204, true), {
    fresh: freshFolder,
  }),
  row('GET', "a project's retention", (w) => `/projects/${w.project}/retention`, role('project', 'viewer', 200)),
  row('PUT', "set a project's retention", (w) => `/projects/${w.project}/retention`, role('project', 'owner', 200), {
    body: () => ({ keep_finished_threads_days: null, prune_checkpoints: false }),
  }),
  row('PUT', "set a project's budget", (w) => `/projects/${w.project}/budget`, role('project', 'owner', 200), {
    body: () => ({ period: 'day', tokens: 1e12 }),
  }),
  row('GET', "a project's budgets", (w) => `/projects/${w.project}/budgets`, role('project', 'owner', 200)),
  row('PUT', "set an organisation's budget", (w) => `/orgs/${w.org}/budget`, role('org', 'owner', 200, true), {
    body: () => ({ period: 'day', amount_usd: 1e6 }),
  }),
  row('GET', "an organisation's budgets", (w) => `/orgs/${w.org}/budgets`, role('org', 'owner', 200, true)),
  row('DELETE', 'remove a budget', (_w, f) => `/budgets/${f.budget}`, role('project', 'owner', 204), {
    fresh: freshBudget,
  }),
  row(
    'PUT',
    "set a project's secret",
    (w) => `/projects/${w.project}/secrets/MATRIX_TOKEN`,
    role('project', 'owner', 200),
    { body: () => ({ value: 'matrix-secret-value' }) },
  ),
  row('GET', "a project's secrets", (w) => `/projects/${w.project}/secrets`, role('project', 'owner', 200)),
  row(
    'DELETE',
    "delete a project's secret",
    (w) => `/projects/${w.project}/secrets/MATRIX_GONE`,
    role('project', 'owner', 204),
    { fresh: freshSecret('projects') },
  ),
  row(
    'PUT',
    "set an organisation's secret",
    (w) => `/orgs/${w.org}/secrets/MATRIX_TOKEN`,
    role('org', 'owner', 200, true),
    {
      body: () => ({ value: 'matrix-secret-value' }),
    },
  ),
  row('GET', "an organisation's secrets", (w) => `/orgs/${w.org}/secrets`, role('org', 'owner', 200, true)),
  row(
    'DELETE',
    "delete an organisation's secret",
    (w) => `/orgs/${w.org}/secrets/MATRIX_GONE`,
    role('org', 'owner', 204, true),
    { fresh: freshSecret('orgs') },
  ),
  row('GET', "a project's audit log", (w) => `/audit?project_id=${w.project}`, role('project', 'admin', 200)),
  row('GET', "an organisation's audit log", (w) => `/audit?org_id=${w.org}`, role('org', 'admin', 200, true)),
  row('GET', 'the whole audit log', () => '/audit', { kind: 'instance' }),
  row('POST', 'create a team', () => '/teams', role('org', 'admin', 201), {
    body: (w) => ({ name: 'New team', parent_id: w.org }),
  }),
  row('DELETE', 'delete a team', (_w, f) => `/teams/${f.team}`, role('org', 'admin', 204), {
    fresh: async (server, w) => ({ team: await freshScope(server, 'team', w.org) }),
  }),
  row('POST', 'create a project', () => '/projects', role('team', 'admin', 201), {
    body: (w) => ({ name: 'New project', parent_id: w.team }),
  }),
  row('DELETE', 'delete a project', (_w, f) => `/projects/${f.project}`, role('team', 'admin', 204), {
    fresh: async (server, w) => ({ project: await freshScope(server, 'project', w.team) }),
  }),
  row('DELETE', 'delete an organisation', (_w, f) => `/orgs/${f.org}`, role('org', 'admin', 204), {
    fresh: mirroredOrg,
  }),
  row('DELETE', 'delete the default project', (w) => `/projects/${w.project}`, role('team', 'admin', 409), {
    only: 'default',
  }),
  row('DELETE', 'delete the default organisation', (w) => `/orgs/${w.org}`, role('org', 'admin', 409), {
    only: 'default',
  }),
  row('POST', 'create an organisation', () => '/orgs', { kind: 'instance' }, { body: () => ({ name: 'New org' }) }),
  row('GET', "the instance's mail server", () => '/settings/email', { kind: 'instance' }),
  row(
    'PUT',
    "set the instance's mail server",
    () => '/settings/email',
    { kind: 'instance' },
    { body: () => ({ host: 'smtp.example.com', port: 587, secure: false, from: 'agents@example.com' }) },
  ),
  row('POST', 'a test mail', () => '/settings/email/test', { kind: 'instance' }, { body: () => ({}) }),
  row(
    'GET',
    "whom an organisation's stops are mailed to",
    (w) => `/orgs/${w.org}/email`,
    role('org', 'viewer', 200, true),
  ),
  row(
    'PUT',
    "choose whom an organisation's stops are mailed to",
    (w) => `/orgs/${w.org}/email`,
    role('org', 'admin', 200, true),
    { body: () => ({ recipients: null }) },
  ),
  row(
    'GET',
    "whom a project's stops are mailed to",
    (w) => `/projects/${w.project}/email`,
    role('project', 'viewer', 200),
  ),
  row(
    'PUT',
    "choose whom a project's stops are mailed to",
    (w) => `/projects/${w.project}/email`,
    role('project', 'owner', 200),
    { body: () => ({ recipients: null }) },
  ),
  row(
    'POST',
    'pull a local model',
    () => '/models/local/pulls',
    { kind: 'instance' },
    { body: () => ({ name: 'llama3.2:1b' }) },
  ),
  row(
    'GET',
    "a model pull's progress",
    (_w, f) => `/models/local/pulls/${f.pull}`,
    { kind: 'instance' },
    {
      fresh: freshPull,
    },
  ),
  row(
    'POST',
    'cancel a model pull',
    (_w, f) => `/models/local/pulls/${f.pull}/cancel`,
    { kind: 'instance' },
    {
      body: () => ({}),
      fresh: freshPull,
    },
  ),
  row(
    'POST',
    'delete a local model',
    () => '/models/local/delete',
    { kind: 'instance' },
    { body: () => ({ model: 'llama3.2' }) },
  ),
  row(
    'PUT',
    'choose the default model',
    () => '/models/default',
    { kind: 'instance' },
    { body: () => ({ model: 'llama3.2' }) },
  ),
  ...(
    [
      ['a project', 'project_id', 'project'],
      ['an organisation', 'org_id', 'org'],
    ] as const
  ).flatMap(([what, param, scope]) => [
    row('POST', `register ${what}'s webhook`, () => '/webhooks', role(scope, 'admin', 201), {
      body: (w) => ({ ...WEBHOOK, [param]: w[scope] }),
    }),
    row('GET', `list ${what}'s webhooks`, (w) => `/webhooks?${param}=${w[scope]}`, role(scope, 'admin', 200)),
  ]),
  row('DELETE', 'remove a webhook', (_w, f) => `/webhooks/${f.webhook}`, role('project', 'admin', 204), {
    fresh: freshWebhook,
  }),
  row('GET', "a webhook's deliveries", (_w, f) => `/webhooks/${f.webhook}/deliveries`, role('project', 'admin', 200), {
    fresh: freshWebhook,
  }),
  row('GET', 'next times of a cron', () => '/schedules/next-times?cron=0%209%20*%20*%20*&timezone=UTC', {
    kind: 'signed',
    status: 200,
  }),
  row('GET', "a project's schedules", (w) => `/projects/${w.project}/schedules`, role('project', 'viewer', 200)),
  row('POST', 'create a schedule', (w) => `/projects/${w.project}/schedules`, role('project', 'member', 201), {
    body: () => SCHEDULE,
  }),
  row('GET', 'read a schedule', (_w, f) => `/schedules/${f.schedule}`, role('project', 'viewer', 200), {
    fresh: freshSchedule,
  }),
  row('GET', "a schedule's fires", (_w, f) => `/schedules/${f.schedule}/fires`, role('project', 'viewer', 200), {
    fresh: freshSchedule,
  }),
  // Its maker (a member) may change it too; the matrix's schedules are the instance admin's, so it shows the owners.
  row('PATCH', 'change a schedule', (_w, f) => `/schedules/${f.schedule}`, role('project', 'owner', 200), {
    body: () => ({ message: 'changed by the matrix' }),
    fresh: freshSchedule,
  }),
  ...(['pause', 'resume'] as const).map((action) =>
    row(
      'POST',
      `${action} a schedule`,
      (_w, f) => `/schedules/${f.schedule}/${action}`,
      role('project', 'owner', 200),
      {
        fresh: freshSchedule,
      },
    ),
  ),
  row('POST', 'run a schedule now', (_w, f) => `/schedules/${f.schedule}/run`, role('project', 'owner', 201), {
    fresh: freshSchedule,
  }),
  row('DELETE', 'delete a schedule', (_w, f) => `/schedules/${f.schedule}`, role('project', 'owner', 204), {
    fresh: freshSchedule,
  }),
  // What administrators set for agents: an organisation's floor of tool policies, the instance's MCP servers
  // (test/tools/org-tool-policies.int.test.ts and mcp-registry.int.test.ts check what they do).
  row(
    'GET',
    "an organisation's tool policies",
    (w) => `/orgs/${w.org}/tool-policies`,
    role('org', 'viewer', 200, true),
  ),
  row(
    'PUT',
    "set an organisation's tool policies",
    (w) => `/orgs/${w.org}/tool-policies`,
    role('org', 'admin', 200, true),
    {
      body: () => ({ policies: {} }),
    },
  ),
  row('GET', 'the registered MCP servers', () => '/mcp-servers', { kind: 'signed', status: 200 }),
  row(
    'PUT',
    'register an MCP server',
    () => '/mcp-servers/matrix-server',
    { kind: 'instance' },
    {
      body: () => ({ url: 'https://192.0.2.10/mcp' }),
    },
  ),
  row('DELETE', 'remove a registered MCP server', () => '/mcp-servers/matrix-server', { kind: 'instance' }),
  // Agents people make (test/agents/stored-agents.int.test.ts checks what they do). The name is looked up in the
  // world's project, which another world's caller may not name: 404.
  row(
    'POST',
    'check an agent source',
    () => '/agents/validate',
    { kind: 'signed', status: 200 },
    {
      body: () => ({ source: agentSource('matrix-checked') }),
    },
  ),
  row('POST', 'create an agent', (w) => `/projects/${w.project}/agents`, role('project', 'owner', 201), {
    body: (_w, f) => ({ source: agentSource(f.agent!) }),
    fresh: async () => ({ agent: agentName() }),
  }),
  row('POST', 'try an agent source', (w) => `/projects/${w.project}/agents/try`, role('project', 'owner', 200), {
    body: () => ({ source: agentSource('matrix-tried'), message: 'try it' }),
  }),
  row('GET', 'read an agent', (w, f) => `/agents/${f.agent}?project_id=${w.project}`, role('project', 'viewer', 200), {
    fresh: freshAgent,
  }),
  row('PUT', 'change an agent', (w, f) => `/agents/${f.agent}?project_id=${w.project}`, role('project', 'owner', 200), {
    body: (_w, f) => ({ source: agentSource(f.agent!, 'Changed by the matrix.'), note: 'matrix' }),
    fresh: freshAgent,
  }),
  row(
    'DELETE',
    'delete an agent',
    (w, f) => `/agents/${f.agent}?project_id=${w.project}`,
    role('project', 'owner', 204),
    {
      fresh: freshAgent,
    },
  ),
  row(
    'PUT',
    'share an agent with the organisation',
    (w, f) => `/agents/${f.agent}/shared?project_id=${w.project}`,
    role('org', 'admin', 200, true),
    { body: () => ({ shared: true }), fresh: freshAgent },
  ),
  row(
    'GET',
    "an agent's versions",
    (w, f) => `/agents/${f.agent}/versions?project_id=${w.project}`,
    role('project', 'viewer', 200),
    { fresh: freshAgent },
  ),
  row(
    'GET',
    "an agent's version",
    (w, f) => `/agents/${f.agent}/versions/1?project_id=${w.project}`,
    role('project', 'viewer', 200),
    { fresh: freshAgent },
  ),
  row(
    'POST',
    "restore an agent's version",
    (w, f) => `/agents/${f.agent}/versions/1/restore?project_id=${w.project}`,
    role('project', 'owner', 200),
    { fresh: freshAgent },
  ),
];

/**
 * The operations whose callers are not roles on a scope, checked by the files named: the LangGraph API (the same
 * rules through /lg: another organisation's 404 on each thread and run route, a viewer's 403 on a decision), the
 * caller's own personal access tokens, /metrics with its own token, and Slack (its connection is checked with Slack,
 * its links are the caller's own, its request URL takes Slack's signature). Every other operation of /openapi.json is
 * a row of MATRIX: the matrix's first test fails on one that is neither.
 */
const CHECKED_ELSEWHERE: { paths: RegExp; file: string }[] = [
  { paths: /^\/lg\//, file: 'test/langgraph/lg-threads.int.test.ts' },
  { paths: /^\/me\/tokens(\/|$)/, file: 'test/auth/personal-tokens.int.test.ts' },
  { paths: /^\/metrics$/, file: 'test/server/metrics.int.test.ts' },
  // Slack's connection needs Slack (a stand-in there), its links are the caller's own, and its request URL is signed.
  {
    paths: /^\/(orgs\/\{id\}\/slack|projects\/\{id\}\/slack|me\/slack|integrations\/slack\/)/,
    file: 'test/slack/slack.int.test.ts',
  },
  // A mail's decision link takes its own single-use token, as the person it was sent to.
  { paths: /^\/stop-links\//, file: 'test/email/email.int.test.ts' },
  // Cancelling needs an experiment still running when the call comes: there its items' runs are slowed to be so.
  { paths: /^\/experiments\/\{id\}\/cancel$/, file: 'test/runs/experiments.int.test.ts' },
  // A question needs an MCP server that asks mid-call (the asking server there): a member answers, a viewer gets 403,
  // another organisation's member 404.
  { paths: /^\/stops\/\{stop_id\}\/answer$/, file: 'test/tools/tool-questions.int.test.ts' },
  // An MCP client's sign-ins are the caller's own; the consent page takes the cookie of the browser that signed in.
  { paths: /^\/(me\/mcp-grants|oauth\/consent)(\/|$)/, file: 'test/mcp/mcp-oauth.int.test.ts' },
  // A comparison to read is made by a comparison there: a viewer reads it, another organisation's member gets 404.
  { paths: /^\/runs\/\{id\}\/comparison$/, file: 'test/runs/compare-run.int.test.ts' },
];

/** `METHOD /template` of each row: its path, with stand-in ids and without its query, matched to the templates. */
function operationsOfMatrix(templates: string[]): Set<string> {
  const id = 'x';
  const w: World = {
    name: 'default',
    org: id,
    team: id,
    project: id,
    finished: { run_id: id, thread_id: id },
    dataset: { id, experiment: id, other: id },
  };
  const f: Fresh = {
    gated: { run_id: id, thread_id: id },
    checkpoint: id,
    thread: id,
    team: id,
    project: id,
    org: id,
    victim: id,
    webhook: id,
    schedule: id,
    toolCall: id,
    stop: id,
    grant: id,
    pull: id,
    folderPath: id,
    folder: id,
    agent: id,
    dataset: { id, item: id },
  };
  const matches = (template: string, concrete: string) =>
    new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(concrete);
  return new Set(
    MATRIX.flatMap((r) => {
      const concrete = r.path(w, f).split('?')[0]!;
      // A literal path (`/schedules/next-times`) before a template that also matches it (`/schedules/{id}`).
      const template = templates.includes(concrete) ? concrete : templates.find((t) => matches(t, concrete));
      return template ? [`${r.method} ${template}`] : [];
    }),
  );
}

async function call(server: TestServer, row: Row, w: World, f: Fresh, token: string | null): Promise<number> {
  const body = row.body?.(w, f);
  const res = await fetch(`${server.url}${row.path(w, f)}`, {
    method: row.method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  if (res.headers.get('content-type')?.includes('event-stream')) await res.body?.cancel();
  else await res.text();
  return res.status;
}

describe('the role matrix with AUTH_ENABLED=true, roles held at each level, in two organisations', () => {
  let server: TestServer;
  const worlds = {} as Record<World['name'], World>;
  const callers: Record<World['name'], Caller[]> = { default: [], second: [] };

  beforeAll(async () => {
    server = await ctx.start({
      AUTH_ENABLED: 'true',
      SESSION_SECRET: SECRET,
      SVC_API_TOKEN: API_TOKEN,
      GENERATED_DIR: catalog,
      ...ROOTS,
      ...LIMITS_ROOM,
    });
    const second = await freshOrg(server);
    const registered = await server.request(`/orgs/${second.org}/folders`, {
      method: 'POST',
      json: { path: path.join(roots, 'second') },
    });
    expect(registered.status).toBe(201);
    for (const [name, ids] of [
      ['default', { org: DEFAULT_ORG_ID, team: DEFAULT_TEAM_ID, project: DEFAULT_PROJECT_ID }],
      ['second', second],
    ] as const) {
      worlds[name] = {
        name,
        ...ids,
        finished: (await fixtures(server, ids.project)).finished,
        dataset: await datasetOf(server, ids.project),
      };
    }
    const people: Caller[] = [];
    for (const name of ['default', 'second'] as const) {
      for (const level of LEVELS) {
        for (const held of RANK) {
          const id = await newUser(server, `${held}@${level}`);
          await grant(server, id, level, worlds[name][level], held);
          people.push({ label: `${held} on ${level}`, id, token: await sign(id), world: name, level, role: held });
        }
      }
    }
    const outsider = await newUser(server, 'outsider');
    for (const name of ['default', 'second'] as const) {
      const other = people.find((p) => p.world !== name && p.level === 'org' && p.role === 'admin')!;
      callers[name] = [
        ...people.filter((p) => p.world === name),
        { label: 'outsider', id: outsider, token: await sign(outsider) },
        { ...other, label: "the other organisation's admin" },
        { label: 'no token', id: randomUUID(), token: null },
      ];
    }
  }, 120_000);
  afterAll(() => server?.close());

  it('has a row for every operation of /openapi.json but those CHECKED_ELSEWHERE names', async () => {
    const document = (await (await server.request('/openapi.json')).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const templates = Object.keys(document.paths);
    const inMatrix = operationsOfMatrix(templates);
    const missing = templates.flatMap((template) =>
      Object.keys(document.paths[template]!)
        .filter((method) => ['get', 'put', 'post', 'patch', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${template}`)
        .filter((operation) => !inMatrix.has(operation))
        .filter(() => !CHECKED_ELSEWHERE.some(({ paths }) => paths.test(template))),
    );
    expect(missing).toEqual([]);
    for (const { file } of CHECKED_ELSEWHERE) expect(fs.existsSync(path.join(ROOT, file)), file).toBe(true);
  });

  describe.each(['default', 'second'] as const)('in the %s organisation', (name) => {
    it.each(MATRIX.filter((r) => !r.only || r.only === name))('$name: $method', async (r) => {
      const w = worlds[name];
      const seen: Record<string, number> = {};
      const wanted: Record<string, number> = {};
      for (const caller of callers[name]) {
        const f = r.fresh ? await r.fresh(server, w, caller) : {};
        seen[caller.label] = await call(server, r, w, f, caller.token);
        wanted[caller.label] = expected(r, caller, w);
      }
      const same = seen['no token']!;
      if (r.rule.kind === 'public' && r.rule.status === 'same') {
        expect([401, 403, 404]).not.toContain(same);
        for (const label of Object.keys(wanted)) wanted[label] = same;
      }
      expect(seen).toEqual(wanted);
    });
  });
});

describe('the same matrix with AUTH_ENABLED=false: everyone is the anonymous admin', () => {
  let server: TestServer;
  let w: World;
  let admin: Caller;
  beforeAll(async () => {
    server = await ctx.start({ AUTH_ENABLED: 'false', GENERATED_DIR: catalog, ...ROOTS, ...LIMITS_ROOM });
    const id = await newUser(server, 'anonymous');
    admin = { label: 'anonymous', id, token: 'unused', world: 'default', level: 'org', role: 'admin' };
    const ids = { org: DEFAULT_ORG_ID, team: DEFAULT_TEAM_ID, project: DEFAULT_PROJECT_ID };
    w = {
      name: 'default',
      ...ids,
      finished: (await fixtures(server)).finished,
      dataset: await datasetOf(server, ids.project),
    };
  });
  afterAll(() => server?.close());

  it.each(MATRIX.filter((r) => r.only !== 'second' && r.rule.kind !== 'instance'))('$name: $method', async (r) => {
    const f = r.fresh ? await r.fresh(server, w, admin) : {};
    const status = await call(server, r, w, f, null);
    if (r.rule.kind === 'public' && r.rule.status === 'same') expect([401, 403, 404]).not.toContain(status);
    else expect(status).toBe(expected(r, admin, w));
  });
});

describe('tokens', () => {
  let server: TestServer;
  let userId: string;
  beforeAll(async () => {
    server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET });
    userId = await user(server, 'member');
  });
  afterAll(() => server?.close());

  const status = async (token: string) =>
    (await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('accepts a valid session and rejects expired, wrongly signed, unsigned, tampered and other-algorithm tokens', async () => {
    expect(await status(await sign(userId))).toBe(200);
    expect(await status(await sign(userId, SECRET, Math.floor(Date.now() / 1000) - 10))).toBe(401);
    expect(await status(await sign(userId, 'another-secret-of-enough-length-000'))).toBe(401);
    expect(await status(new UnsecuredJWT({ sub: userId, iss: SESSION_ISSUER }).setExpirationTime('1h').encode())).toBe(
      401,
    );
    const [header, , signature] = (await sign(userId)).split('.');
    const forged = Buffer.from(
      JSON.stringify({ sub: randomUUID(), iss: SESSION_ISSUER, exp: Math.floor(Date.now() / 1000) + 3600 }),
    ).toString('base64url');
    expect(await status(`${header}.${forged}.${signature}`)).toBe(401);
    const hs512 = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS512' })
      .setSubject(userId)
      .setIssuer(SESSION_ISSUER)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(SECRET));
    expect(await status(hs512)).toBe(401);
    const wrongIssuer = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(userId)
      .setIssuer('someone-else')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(SECRET));
    expect(await status(wrongIssuer)).toBe(401);
    const res = await fetch(`${server.url}/auth/me`, { headers: { authorization: 'Bearer nonsense' } });
    expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'invalid or expired token' } });
  });

  it('rejects a session without an expiry: it would be valid forever', async () => {
    const forever = await new SignJWT({ name: 'forever' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(userId)
      .setIssuer(SESSION_ISSUER)
      .setIssuedAt()
      .sign(new TextEncoder().encode(SECRET));
    expect(await status(forever)).toBe(401);
  });

  it('rejects the session of a user who was deleted', async () => {
    const gone = await user(server, 'member');
    const token = await sign(gone);
    expect(await status(token)).toBe(200);
    await server.pool.query(`DELETE FROM svc_users WHERE id = $1`, [gone]);
    expect(await status(token)).toBe(401);
    const runs = await fetch(`${server.url}/threads`, { headers: { authorization: `Bearer ${token}` } });
    expect(runs.status).toBe(401);
  });

  it('answers a subject that is not a user id with 401, never a 500', async () => {
    for (const subject of ['not-a-uuid', "0' OR '1'='1", '']) {
      const token = await sign(subject);
      for (const path of ['/auth/me', '/threads', '/orgs']) {
        const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status, `${JSON.stringify(subject)} ${path}`).toBe(401);
        expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'invalid or expired token' } });
      }
    }
  });
});

describe('granting roles', () => {
  it('nobody grants a role above their own: a project owner cannot make anyone admin', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET });
    try {
      const owner = await user(server, null);
      await server.pool.query(
        `INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'project', $2, 'owner')`,
        [owner, DEFAULT_PROJECT_ID],
      );
      const friend = await user(server, null);
      const token = await sign(owner);
      const grant = (role: string) =>
        fetch(`${server.url}/projects/${DEFAULT_PROJECT_ID}/members/${friend}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ role }),
        });
      const refused = await grant('admin');
      expect(refused.status).toBe(403);
      expect(await refused.json()).toEqual({
        error: { code: 'forbidden', message: 'your role here is owner; you cannot grant admin, which is above it' },
      });
      const { rows } = await server.pool.query(`SELECT role FROM svc_memberships WHERE user_id = $1`, [friend]);
      expect(rows).toEqual([]);
      for (const role of ['owner', 'member', 'viewer']) expect((await grant(role)).status, role).toBe(200);
      // Nor can she raise herself.
      const self = await fetch(`${server.url}/projects/${DEFAULT_PROJECT_ID}/members/${owner}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'admin' }),
      });
      expect(self.status).toBe(403);
    } finally {
      await server.close();
    }
  });
});

describe('tenant isolation', () => {
  it('a user of one organisation can neither list nor fetch nor approve in another', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN });
    try {
      const org = await (await server.request('/orgs', { method: 'POST', json: { name: 'Other org' } })).json();
      const team = await (
        await server.request('/teams', { method: 'POST', json: { name: 'Other team', parent_id: org.id } })
      ).json();
      const project = await (
        await server.request('/projects', { method: 'POST', json: { name: 'Other project', parent_id: team.id } })
      ).json();
      const stranger = randomUUID();
      await server.pool.query(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'test', $2, 'stranger')`, [
        stranger,
        stranger,
      ]);
      expect(
        (await server.request(`/orgs/${org.id}/members/${stranger}`, { method: 'PUT', json: { role: 'admin' } }))
          .status,
      ).toBe(200);
      const token = await sign(stranger);
      const as = (path: string, init: RequestInit = {}) =>
        fetch(`${server.url}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        });

      const { gated } = await fixtures(server);
      const threads = await (await as('/threads')).json();
      expect(threads.items.map((t: { id: string }) => t.id)).not.toContain(gated.thread_id);
      expect((await as(`/threads/${gated.thread_id}`)).status).toBe(404);
      expect((await as(`/runs/${gated.run_id}`)).status).toBe(404);
      const approve = await as(`/threads/${gated.thread_id}/gates/gate/approve`, { method: 'POST', body: '{}' });
      expect(approve.status).toBe(404);
      expect(await approve.json()).toEqual({
        error: { code: 'not_found', message: `thread ${gated.thread_id} not found` },
      });
      expect((await as(`/runs/${gated.run_id}/cancel`, { method: 'POST', body: '{}' })).status).toBe(404);
      const orgs = await (await as('/orgs')).json();
      expect(orgs.map((o: { id: string; role: string }) => [o.id, o.role])).toEqual([[org.id, 'admin']]);
      expect(await (await as(`/teams?org_id=${DEFAULT_ORG_ID}`)).json()).toEqual([]);
      expect((await as(`/projects`)).status).toBe(200);
      expect((await (await as('/projects')).json()).map((p: { id: string }) => p.id)).toEqual([project.id]);
      expect((await as(`/orgs/${DEFAULT_ORG_ID}/members`)).status).toBe(404);
      expect((await server.request(`/runs/${gated.run_id}`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('transport guards', () => {
  it('refuses requests addressed to a non-loopback name while listening on loopback (DNS rebinding)', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'false' });
    try {
      const http = await import('node:http');
      const statusFor = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(`${server.url}/health`, { headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      const status = await statusFor('attacker.example:8000');
      expect(status).toBe(403);
      expect(await statusFor('127.0.0.1.evil.example')).toBe(403);
      expect(await statusFor(`127.0.0.1.evil.example:${server.port}`)).toBe(403);
      expect(await statusFor(`[::1]:${server.port}`)).toBe(200);
      expect((await fetch(`${server.url.replace('127.0.0.1', 'localhost')}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('sends no CORS headers unless CORS_ORIGINS lists the origin', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'false', CORS_ORIGINS: 'http://app.example' });
    try {
      const allowed = await fetch(`${server.url}/agents`, { headers: { origin: 'http://app.example' } });
      expect(allowed.headers.get('access-control-allow-origin')).toBe('http://app.example');
      const preflight = await fetch(`${server.url}/graphs/summary/run`, {
        method: 'OPTIONS',
        headers: {
          origin: 'http://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-headers')).toContain('Authorization');
      // A page may retry a decision or a run start under its key, and read the headers the document declares.
      expect(preflight.headers.get('access-control-allow-headers')).toContain('Idempotency-Key');
      expect(allowed.headers.get('access-control-expose-headers')?.split(/,\s*/)).toEqual(
        expect.arrayContaining(['Content-Type', 'API-Version', 'Retry-After', 'Location', 'Idempotent-Replayed']),
      );
      const other = await fetch(`${server.url}/agents`, { headers: { origin: 'http://evil.example' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      // The answer depends on Origin whichever it is, so a shared cache must key on it every time.
      expect(allowed.headers.get('vary')).toMatch(/\bOrigin\b/);
      expect(other.headers.get('vary')).toMatch(/\bOrigin\b/);
      expect((await fetch(`${server.url}/agents`)).headers.get('vary')).toMatch(/\bOrigin\b/);
    } finally {
      await server.close();
    }
  });
});
