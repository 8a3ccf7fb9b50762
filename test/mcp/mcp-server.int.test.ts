import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import { threePeople } from '../helpers/sessions';
import { until } from '../helpers/until';
import { connectMcp, errorText, MCP_TOOLS, type Answerer, type TestMcpClient } from './mcp-client';

/**
 * The service as an MCP server (docs/mcp.md), driven by the official SDK's client over streamable HTTP against the
 * real server and PostgreSQL, with the Ollama stand-in as the model: the tools, runs to their end and to a gate,
 * approval asked inside the call (elicitation), and the same access rules as the HTTP API.
 */
const SECRET = 'a-session-secret-for-the-mcp-tests-0123456789';
const API_TOKEN = 'mcp-test-admin-token-0123456789';
/** Short, so that the test of a question nobody answers takes seconds. */
const ELICITATION_TIMEOUT_S = 3;

const ctx = useIntegrationServer({
  server: {
    AUTH_ENABLED: 'true',
    SESSION_SECRET: SECRET,
    SVC_API_TOKEN: API_TOKEN,
    MCP_ELICITATION_TIMEOUT_S: String(ELICITATION_TIMEOUT_S),
  },
});

let ann: string;
let vera: string;
let mallory: string;
const clients: TestMcpClient[] = [];

async function connect(token: string, answer?: Answerer): Promise<TestMcpClient> {
  const client = await connectMcp(ctx.server.url, token, answer);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  const pool = ctx.server.pool;
  ({ ann, vera, mallory } = await threePeople(pool, SECRET, DEFAULT_PROJECT_ID));
});
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
});

const accept =
  (content: Record<string, string>): Answerer =>
  async () => ({ action: 'accept', content });

describe('the tools', () => {
  it('lists its tools with descriptions, input and output schemas, and read-only annotations', async () => {
    const { client } = await connect(ann);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()].sort()).toEqual(MCP_TOOLS);
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(20);
      expect(tool.outputSchema).toMatchObject({ type: 'object' });
    }
    expect(byName.get('run_agent')!.inputSchema.required).toEqual(['agent', 'message']);
    expect(byName.get('get_run')!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('run_agent')!.annotations).toMatchObject({ readOnlyHint: false });
    expect(byName.get('cancel_run')!.annotations).toMatchObject({ destructiveHint: true });
  });

  it('lists the agents and commands the caller may run, with their phases and gates', async () => {
    const mcp = await connect(ann);
    const { structuredContent } = await mcp.call('list_agents');
    expect(structuredContent).toMatchObject({
      projects: [{ id: DEFAULT_PROJECT_ID, name: 'Default project' }],
      agents: expect.arrayContaining([
        expect.objectContaining({ name: 'summary', kind: 'command', gates: [] }),
        expect.objectContaining({
          name: 'review',
          kind: 'agent',
          gates: [{ id: 'gate', question: 'Publish this review?' }],
          phases: expect.arrayContaining([{ id: 'analysis', kind: 'llm', label: 'Analysis' }]),
        }),
      ]),
    });
  });

  it('runs a command to its end in the call, with progress for each phase', async () => {
    ctx.model.reply(['All ', 'good.']);
    const mcp = await connect(ann);
    const result = await mcp.call('run_agent', { agent: 'summary', message: 'summarise the repository' });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ status: 'completed', output: 'All good.', waiting: null });
    expect(result.progress).toEqual(expect.arrayContaining(['phase dispatch', 'phase execute', 'phase summarize']));
    const run = result.structuredContent as { run_id: string; thread_id: string };
    const read = await mcp.call('get_run', { run_id: run.run_id });
    expect(read.structuredContent).toMatchObject({ status: 'completed', output: 'All good.' });
    const runs = await mcp.call('list_thread_runs', { thread_id: run.thread_id });
    expect(runs.structuredContent).toMatchObject({ runs: [{ run_id: run.run_id, status: 'completed' }] });
  });
});

describe('approval inside the call', () => {
  it('asks at the gate with the gated content and a flat form, and an approval runs it to its end', async () => {
    ctx.model.reply(['The ', 'change ', 'is ', 'sound.']);
    const asked: { message: string; schema: unknown }[] = [];
    const mcp = await connect(ann, async (request) => {
      asked.push({ message: request.message, schema: 'requestedSchema' in request ? request.requestedSchema : null });
      return { action: 'accept', content: { decision: 'approve', reason: 'looks right' } };
    });
    const result = await mcp.call('run_agent', { agent: 'review', message: 'review my branch' });
    expect(result.structuredContent).toMatchObject({ status: 'completed', waiting: null });
    expect(asked).toHaveLength(1);
    expect(asked[0]!.message).toContain('Publish this review?');
    expect(asked[0]!.message).toContain('The change is sound.');
    expect(asked[0]!.schema).toMatchObject({
      type: 'object',
      properties: { decision: { type: 'string' }, reason: { type: 'string' }, text: { type: 'string' } },
      required: ['decision'],
    });
    expect((result.structuredContent as { decisions: unknown[] }).decisions).toEqual([
      expect.objectContaining({ gate: 'gate', decision: 'approve', by: 'Ann', reason: 'looks right' }),
    ]);
    expect(result.progress).toContain('waiting for approval at gate');
  });

  it('takes an edit: the edited text replaces the output the gate shows', async () => {
    ctx.model.reply(['Draft ', 'review.']);
    const mcp = await connect(ann, accept({ decision: 'edit', text: 'A better review.' }));
    const result = await mcp.call('run_agent', { agent: 'review', message: 'review my branch' });
    expect(result.structuredContent).toMatchObject({ status: 'completed' });
    const { thread_id } = result.structuredContent as { thread_id: string };
    const decisions = await (await ctx.server.request(`/threads/${thread_id}/decisions`)).json();
    expect(decisions).toEqual([expect.objectContaining({ decision: 'edit', edits: { analysis: 'A better review.' } })]);
  });

  it('without elicitation, answers that the run waits; decide_approval then resumes it', async () => {
    ctx.model.reply(['Needs ', 'a look.']);
    const mcp = await connect(ann);
    const result = await mcp.call('run_agent', { agent: 'review', message: 'review my branch' });
    const waiting = result.structuredContent as {
      run_id: string;
      thread_id: string;
      status: string;
      waiting: Record<string, string>;
    };
    expect(waiting).toMatchObject({
      status: 'waiting_approval',
      waiting: {
        kind: 'gate',
        gate: 'gate',
        question: 'Publish this review?',
        why_not_asked: expect.stringContaining('did not declare elicitation'),
        studio_url: `${ctx.server.url}/ui?thread=${waiting.thread_id}`,
      },
    });
    expect(waiting.waiting.content).toContain('Needs a look.');
    const approvals = await mcp.call('list_approvals');
    expect(approvals.structuredContent).toMatchObject({
      approvals: expect.arrayContaining([expect.objectContaining({ run_id: waiting.run_id, gate: 'gate' })]),
    });
    const decided = await mcp.call('decide_approval', {
      thread_id: waiting.thread_id,
      gate: 'gate',
      decision: 'approve',
    });
    expect(decided.structuredContent).toMatchObject({ run_id: waiting.run_id, status: 'running' });
    await until(async () => {
      const read = await mcp.call('get_run', { run_id: waiting.run_id });
      return (read.structuredContent as { status: string }).status === 'completed' ? true : undefined;
    });
  });

  it('a question nobody answers in time is withdrawn; the call answers that the run waits, untouched', async () => {
    ctx.model.reply(['Slow ', 'reader.']);
    let withdrawn = false;
    const mcp = await connect(ann, () => new Promise(() => {}));
    mcp.client.setNotificationHandler(
      (await import('@modelcontextprotocol/sdk/types.js')).CancelledNotificationSchema,
      () => {
        withdrawn = true;
      },
    );
    const result = await mcp.call('run_agent', { agent: 'review', message: 'review my branch' });
    expect(result.structuredContent).toMatchObject({
      status: 'waiting_approval',
      waiting: { why_not_asked: `nobody answered within ${ELICITATION_TIMEOUT_S} s; the run still waits` },
    });
    expect(withdrawn).toBe(true);
    const { run_id } = result.structuredContent as { run_id: string };
    const run = await (await ctx.server.request(`/runs/${run_id}`)).json();
    expect(run).toMatchObject({ status: 'waiting_approval', decisions: [] });
    const cancelled = await mcp.call('cancel_run', { run_id, reason: 'not needed' });
    expect(cancelled.structuredContent).toMatchObject({ run_id, status: 'cancelled' });
  });

  it('a declined question leaves the run waiting', async () => {
    ctx.model.reply(['Maybe.']);
    const mcp = await connect(ann, async () => ({ action: 'decline' }));
    const result = await mcp.call('run_agent', { agent: 'review', message: 'review my branch' });
    expect(result.structuredContent).toMatchObject({
      status: 'waiting_approval',
      waiting: { why_not_asked: 'the question was declined in the client; the run still waits' },
    });
  });
});

describe('a tool call that asks', () => {
  it('is asked inside the call with its arguments; the edited call runs once, as approved', async () => {
    const catalog = await writeFixtureCatalog([toolAgent]);
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-tool-'));
    const server = await ctx.start({
      AUTH_ENABLED: 'true',
      SESSION_SECRET: SECRET,
      SVC_API_TOKEN: API_TOKEN,
      GENERATED_DIR: catalog,
    });
    try {
      const file = path.join(project, 'effects.log');
      ctx.model.toolTurns = [[{ name: 'mock__append', arguments: { file, line: 'proposed' } }]];
      ctx.model.reply(['Appended.']);
      const asked: string[] = [];
      const mcp = await connectMcp(server.url, API_TOKEN, async (request) => {
        asked.push(request.message);
        const content: Record<string, string> = request.message.includes('mock.append')
          ? { decision: 'edit', text: JSON.stringify({ file, line: 'edited' }) }
          : { decision: 'approve' };
        return { action: 'accept', content };
      });
      clients.push(mcp);
      const result = await mcp.call('run_agent', { agent: 'tool-review', message: 'append', project_path: project });
      expect(result.structuredContent).toMatchObject({ status: 'completed' });
      expect(asked[0]).toContain('mock.append');
      expect(asked[0]).toContain('"line": "proposed"');
      expect(fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)).toEqual(['edited']);
      const { decisions } = result.structuredContent as { decisions: Record<string, unknown>[] };
      expect(decisions[0]).toMatchObject({ decision: 'edit', tool_call_id: expect.stringMatching(/:intake:/) });
    } finally {
      await server.close();
      fs.rmSync(project, { recursive: true, force: true });
      fs.rmSync(catalog, { recursive: true, force: true });
    }
  });
});

describe('the same rules as the HTTP API', () => {
  it('a viewer is refused a run, and is not asked at a gate she may not decide', async () => {
    const mcp = await connect(vera, accept({ decision: 'approve' }));
    const refused = await mcp.call('run_agent', { agent: 'summary', message: 'hello' });
    expect(errorText(refused)).toBe('you are not member or higher on any project; this needs member or higher');
  });

  it('a member of another organisation sees none of it: the same error as for what does not exist', async () => {
    ctx.model.reply(['Private.']);
    const owner = await connect(ann);
    const waiting = (await owner.call('run_agent', { agent: 'review', message: 'review' })).structuredContent as {
      run_id: string;
      thread_id: string;
    };
    const mcp = await connect(mallory);
    const agents = await mcp.call('list_agents');
    expect(agents.structuredContent).toMatchObject({ projects: [expect.objectContaining({ name: 'Other project' })] });
    const missing = randomUUID();
    expect(errorText(await mcp.call('get_run', { run_id: waiting.run_id }))).toBe(`run ${waiting.run_id} not found`);
    expect(errorText(await mcp.call('get_run', { run_id: missing }))).toBe(`run ${missing} not found`);
    expect(errorText(await mcp.call('list_thread_runs', { thread_id: waiting.thread_id }))).toBe(
      `thread ${waiting.thread_id} not found`,
    );
    expect(errorText(await mcp.call('list_thread_runs', { thread_id: missing }))).toBe(`thread ${missing} not found`);
    expect((await mcp.call('list_approvals')).structuredContent).toEqual({ approvals: [] });
    expect(
      errorText(await mcp.call('decide_approval', { thread_id: waiting.thread_id, gate: 'gate', decision: 'approve' })),
    ).toBe(`thread ${waiting.thread_id} not found`);
    expect(errorText(await mcp.call('cancel_run', { run_id: waiting.run_id }))).toBe(`run ${waiting.run_id} not found`);
    const still = await (await ctx.server.request(`/runs/${waiting.run_id}`)).json();
    expect(still).toMatchObject({ status: 'waiting_approval', decisions: [] });
    await owner.call('cancel_run', { run_id: waiting.run_id });
  });
});

describe('the HTTP door', () => {
  const initialize = (headers: Record<string, string> = {}) =>
    fetch(`${ctx.server.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
      }),
    });

  it('refuses a message nested past 64 levels or holding half a character, as the HTTP API does, logging nothing', async () => {
    const before = ctx.server.logs.length;
    const start = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",';
    for (const [body, why] of [
      [
        `${start}"capabilities":{"x":${'['.repeat(5000)}${']'.repeat(5000)}},"clientInfo":{"name":"a","version":"1"}}}`,
        'nests deeper than 64 levels',
      ],
      [`${start}"capabilities":{},"clientInfo":{"name":"\\ud800","version":"1"}}}`, 'is not valid Unicode text'],
    ]) {
      const answer = await fetch(`${ctx.server.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${API_TOKEN}`,
        },
        body,
      });
      expect(answer.status).toBe(400);
      expect((await answer.json()).error.message).toContain(why);
    }
    expect(ctx.server.logs.slice(before).filter((line) => line.includes(' ERROR '))).toEqual([]);
  });

  it('answers 401 without a token, naming its protected-resource metadata, which names no authorization server', async () => {
    const answer = await initialize();
    expect(answer.status).toBe(401);
    const metadataUrl = `${ctx.server.url}/.well-known/oauth-protected-resource/mcp`;
    expect(answer.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    const metadata = await (await fetch(metadataUrl)).json();
    expect(metadata).toEqual({
      resource: `${ctx.server.url}/mcp`,
      bearer_methods_supported: ['header'],
      resource_name: 'Agent workflow service (send a personal access token: no OAuth sign-in here)',
      resource_documentation: `${ctx.server.url}/#mcp`,
    });
  });

  it("refuses a foreign page's Origin (403) and a look-alike loopback Host (403); takes its own origin", async () => {
    const token = { authorization: `Bearer ${ann}` };
    const foreign = await initialize({ ...token, origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect((await foreign.json()).error.message).toContain('http://evil.example');
    // fetch sets Host itself: a look-alike name goes through node:http, as a rebound page's request would arrive.
    const lookAlike = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${ctx.server.url}/mcp`,
        { method: 'POST', headers: { ...token, host: `127.0.0.1.evil.example:${ctx.server.port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    expect(lookAlike).toBe(403);
    const own = await initialize({ ...token, origin: ctx.server.url });
    expect(own.status).toBe(200);
    expect(own.headers.get('mcp-session-id')).toMatch(/^[\w-]{32}$/);
  });

  it("keeps a session to its person: another's token or an ended session answers 404", async () => {
    const opened = await initialize({ authorization: `Bearer ${ann}` });
    const session = opened.headers.get('mcp-session-id')!;
    const list = (token: string) =>
      fetch(`${ctx.server.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
          'mcp-session-id': session,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
    expect((await list(ann)).status).toBe(200);
    expect((await list(mallory)).status).toBe(404);
    const ended = await fetch(`${ctx.server.url}/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ann}`, 'mcp-session-id': session },
    });
    expect(ended.status).toBe(200);
    expect((await list(ann)).status).toBe(404);
  });
});
