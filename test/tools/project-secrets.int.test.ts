import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src-server/contracts/assets';
import type { RunDetail } from '../../src-server/contracts/runs';
import type { Secret } from '../../src-server/contracts/secrets';
import { createPool, type Pool } from '../../src-server/db/pool';
import { reviewAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import { startOtlpReceiver } from '../helpers/otlp-receiver';
import type { ServerProcess } from '../helpers/process';
import { requestServer, type TestRequestInit } from '../helpers/request';
import { addUser, signSession } from '../helpers/sessions';
import { readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Project and organisation secrets as the variables of a tool's server (docs/tools.md#secrets), end to end: the
 * service as a process of its own on real PostgreSQL, the Ollama stand-in calling a tool, and a real stdio MCP server
 * (test/fixtures/mcp-tracker-server.ts) that declares TRACKER_TOKEN and answers with its sha256, never the token.
 * Two projects of one organisation each set their own token; a third has none of its own and gets the
 * organisation's once there is one. Everything the test captured (the service's log, run events, run details, the API
 * document, the secrets' listings, traces, what the model was sent) is searched for every value: none is anywhere.
 */
const SECRET = 'a-session-secret-for-the-project-secrets-tests-01';
const API_TOKEN = 'project-secrets-test-admin-token-0123456789';
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** The review agent whose intake may call the tracker's one tool, asking nobody. */
const trackerAgent: Manifest = {
  ...reviewAgent,
  name: 'tracker-review',
  source: 'assets/agents/tracker-review.md',
  tools: {
    servers: [
      {
        name: 'tracker',
        transport: 'stdio',
        command: process.execPath,
        args: ['--import', TSX_LOADER, path.join(import.meta.dirname, '..', 'fixtures', 'mcp-tracker-server.ts')],
        env: ['TRACKER_TOKEN'],
      },
    ],
    policies: [{ tool: 'tracker.*', policy: 'allow', ask: null }],
  },
  phases: reviewAgent.phases.map((p) =>
    p.id === 'intake' ? { ...p, tools: { tools: ['tracker.*'], max_tool_calls: 2 } } : p,
  ),
};

/** The values set in this file, each told apart from any other text by a random part. */
const values = {
  alpha: `alpha-tracker-token-${randomUUID()}`,
  alphaChanged: `alpha-tracker-token-changed-${randomUUID()}`,
  beta: `beta-tracker-token-${randomUUID()}`,
  org: `org-tracker-token-${randomUUID()}`,
};
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const ctx = useIntegrationServer({ server: false });
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let catalog: string;
let dataDir: string;
let service: ServerProcess;
let pool: Pool;
let ids: { org: string; team: string; alpha: string; beta: string; gamma: string };

/** Every answer body the test read, for the final search. */
const captured: string[] = [];
/** How many tool calls the runs made. */
let toolCalls = 0;

const request = (to: string, init?: TestRequestInit, token = API_TOKEN) => requestServer(service.url, to, init, token);

/** An answer's body, kept for the search, parsed when it is JSON. */
async function body<T>(response: Response, status: number): Promise<T> {
  const text = await response.text();
  captured.push(text);
  expect(response.status, text).toBe(status);
  return (text ? JSON.parse(text) : undefined) as T;
}

const created = async (to: string, json: unknown) =>
  (await body<{ id: string }>(await request(to, { method: 'POST', json }), 201)).id;

const setSecret = (scope: 'projects' | 'orgs', id: string, value: string, token?: string) =>
  request(`/${scope}/${id}/secrets/TRACKER_TOKEN`, { method: 'PUT', json: { value } }, token);

/**
 * A run in the project whose intake calls the tracker's tool once: its events and its detail, the stream as it came
 * and as it is replayed, all kept for the search.
 */
async function trackerRun(projectId: string) {
  ctx.model.toolTurns = [[{ name: 'tracker__token_sha256', arguments: {} }]];
  ctx.model.reply(['Looked ', 'it up.']);
  const response = await request('/graphs/tracker-review/run', {
    method: 'POST',
    json: { message: 'look up the tracker', project_id: projectId },
  });
  const raw = response.clone();
  const events = await readEvents(response);
  captured.push(await raw.text());
  const runId = (events[0]!.data as { run_id: string }).run_id;
  const replay = await request(`/runs/${runId}/stream`);
  captured.push(await replay.text());
  const detail = await body<RunDetail>(await request(`/runs/${runId}`), 200);
  return { events, detail };
}

/** What the tracker's process answered in a run of the project: the sha256 of its token, and which process it is. */
async function answerIn(projectId: string): Promise<{ sha256: string; instance: string }> {
  const { events, detail } = await trackerRun(projectId);
  expect(detail.status, detail.error_detail ?? '').toBe('waiting_approval');
  const result = events.find(
    (e): e is ReceivedEvent & { data: { type: 'tool_result' } } => e.data.type === 'tool_result',
  );
  expect(result, JSON.stringify(events.map((e) => e.data.type))).toBeDefined();
  toolCalls += 1;
  expect(result!.data).toMatchObject({ tool: 'tracker.token_sha256', is_error: false });
  return JSON.parse(result!.data.text) as { sha256: string; instance: string };
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  catalog = await writeFixtureCatalog([trackerAgent]);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'project-secrets-'));
  service = await ctx.spawn({
    ...receiver.env,
    // Tool calls' arguments and answers in the spans too: were a value in one, the search below would find it.
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    GENERATED_DIR: catalog,
    DATA_DIR: dataDir,
    SECRETS_KEY: randomBytes(32).toString('base64'),
  });
  pool = createPool(ctx.db.url, 2);
  const org = await created('/orgs', { name: 'Acme' });
  const team = await created('/teams', { name: 'Platform', parent_id: org });
  ids = {
    org,
    team,
    alpha: await created('/projects', { name: 'Alpha', parent_id: team }),
    beta: await created('/projects', { name: 'Beta', parent_id: team }),
    gamma: await created('/projects', { name: 'Gamma', parent_id: team }),
  };
});
afterAll(async () => {
  await service?.stop();
  await pool?.end();
  await receiver?.close();
  for (const dir of [catalog, dataDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("a tool server's declared variable, from project and organisation secrets", () => {
  it('is set by owners and admins of the scope only, and listed by name and date, never by value', async () => {
    const before = Date.now();
    const alpha = await body<Secret>(await setSecret('projects', ids.alpha, values.alpha), 200);
    expect(alpha).toEqual({
      name: 'TRACKER_TOKEN',
      scope: { type: 'project', id: ids.alpha },
      set_at: expect.any(String),
      set_by: expect.any(String),
    });
    expect(Date.parse(alpha.set_at)).toBeGreaterThanOrEqual(before - 5000);
    await body(await setSecret('projects', ids.beta, values.beta), 200);

    const listed = await body<{ secrets: Secret[] }>(await request(`/projects/${ids.alpha}/secrets`), 200);
    expect(listed.secrets).toEqual([alpha]);
    expect(Object.keys(listed.secrets[0]!).sort()).toEqual(['name', 'scope', 'set_at', 'set_by']);

    // A member of the project may use it in a run, but neither set nor list it.
    const member = await signSession(await addUser(pool, 'Mia Member', [['project', ids.alpha, 'member']]), SECRET);
    await body(await setSecret('projects', ids.alpha, 'a-members-value', member), 403);
    await body(await request(`/projects/${ids.alpha}/secrets`, {}, member), 403);
    // The owner of the project may.
    const owner = await signSession(await addUser(pool, 'Olga Owner', [['project', ids.alpha, 'owner']]), SECRET);
    const byOwner = await body<{ secrets: Secret[] }>(await request(`/projects/${ids.alpha}/secrets`, {}, owner), 200);
    expect(byOwner.secrets.map((s) => s.name)).toEqual(['TRACKER_TOKEN']);

    // Sealed at rest: the database holds no value in clear.
    const { rows } = await pool.query<{ sealed: string }>('SELECT sealed FROM svc_secrets');
    expect(rows).toHaveLength(2);
    for (const { sealed } of rows) for (const value of Object.values(values)) expect(sealed).not.toContain(value);
  });

  it("gives each project's run its own project's value", async () => {
    const alpha = await answerIn(ids.alpha);
    const beta = await answerIn(ids.beta);
    expect(alpha.sha256).toBe(sha256(values.alpha));
    expect(beta.sha256).toBe(sha256(values.beta));
    expect(alpha.instance).not.toBe(beta.instance);
    // An unchanged value: the next call reaches the same process.
    expect(await answerIn(ids.beta)).toEqual(beta);
  });

  it('applies a changed value from the next call, without a restart of the service', async () => {
    const pid = service.child.pid;
    const first = await answerIn(ids.alpha);
    expect(first.sha256).toBe(sha256(values.alpha));

    const changed = await body<Secret>(await setSecret('projects', ids.alpha, values.alphaChanged), 200);
    expect(changed.name).toBe('TRACKER_TOKEN');
    const next = await answerIn(ids.alpha);
    expect(next.sha256).toBe(sha256(values.alphaChanged));
    // A new process of the server, started with the new value; the service is the same process, still running.
    expect(next.instance).not.toBe(first.instance);
    expect(service.child.pid).toBe(pid);
    expect(service.child.exitCode).toBeNull();
    expect((await request('/health')).status).toBeLessThan(500);
    // Another project's server is untouched.
    expect((await answerIn(ids.beta)).sha256).toBe(sha256(values.beta));
  });

  it("falls back to the organisation's secret; with none anywhere, says where to set it", async () => {
    // The server cannot start without it: the run ends in an error that names the variable and where to set it.
    const { events, detail } = await trackerRun(ids.gamma);
    expect(detail.status).toBe('error');
    const error = events.find((e) => e.data.type === 'run_error')!.data as { error_detail: string };
    for (const said of [error.error_detail, detail.error_detail ?? '']) {
      expect(said).toContain('"tracker" needs the environment variable TRACKER_TOKEN');
      expect(said).toContain("set it as a project or organisation secret, or in the service's environment");
    }

    await body(await setSecret('orgs', ids.org, values.org), 200);
    const listed = await body<{ secrets: Secret[] }>(await request(`/orgs/${ids.org}/secrets`), 200);
    expect(listed.secrets.map((s) => [s.name, s.scope.type])).toEqual([['TRACKER_TOKEN', 'org']]);
    expect((await answerIn(ids.gamma)).sha256).toBe(sha256(values.org));
    // A project's own secret still wins over the organisation's.
    expect((await answerIn(ids.alpha)).sha256).toBe(sha256(values.alphaChanged));
  });

  it(
    'never shows a value: not in the log, the events, the run details, the API document, traces, or to the model',
    {
      timeout: 60_000,
    },
    async () => {
      const document = await body<{ paths: Record<string, unknown> }>(await request('/openapi.json'), 200);
      expect(Object.keys(document.paths)).toContain('/projects/{id}/secrets/{name}');
      // The spans of every run's tool call have been exported.
      const spans = await until(async () => {
        const tools = receiver.spans.filter((s) => s.name.startsWith('execute_tool'));
        return tools.length >= toolCalls ? receiver.spans : undefined;
      }, 30_000);
      const traces = JSON.stringify(spans, (_key, value: unknown) =>
        typeof value === 'bigint' ? value.toString() : value,
      );
      // The tool answers are in the traces (their hashes): what a value would be in, had one leaked.
      expect(traces).toContain(sha256(values.beta));
      const log = service.output();
      // The log holds the server's own lines: it is the log a value would show in.
      expect(log).toContain('mcp-tracker-server ready');
      expect(log).toMatch(/tracker: started/);
      const model = JSON.stringify(ctx.model.requests);
      const everything = { log, traces, model, answers: captured.join('\n') };
      for (const [where, text] of Object.entries(everything)) {
        for (const [name, value] of Object.entries(values)) {
          expect(text.includes(value), `${name}'s value in ${where}`).toBe(false);
        }
      }
      expect(captured.length).toBeGreaterThan(20);
    },
  );
});
