import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN_ADMIN } from '../../src-server/auth/principal';
import { RunEventSchema, type RunEvent } from '../../src-server/contracts/events';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { DEFAULT_GENERATED_DIR } from '../../src-server/assets/catalog';
import { toolAgent } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import { connectMcp } from '../mcp/mcp-client';
import { compiledLaunch, spawnServer, type ServerProcess } from '../helpers/process';

/**
 * The curl examples of README.md and of the portal page (`GET /`), run as a reader would run them, against a fresh
 * server started as `npm start` starts it: the compiled server (`out/server/cli.js`) with the shipped assets
 * (`generated/` built from `assets/`), authentication on, the stand-in model as the local runtime and the default
 * model. The examples are read from README.md and from the served page, so that they cannot drift from what is
 * tested, and run in bash with the real `curl`. Only the host and the token are given: README's
 * `http://127.0.0.1:8000` becomes the server's address and `$TOKEN` its token; the portal's own "Set up your shell"
 * lines run first, with the token pasted where they ask for it (its `$BASE` is already this server's).
 *
 * Examples that use an earlier one's output get it as their prose says: README's `$RUN` is the run_id of the JSON
 * start; on the portal, `$THREAD_ID` and `$RUN_ID` come from `run_start` of the run example (or the JSON start's
 * answer), and `$STREAM_URL` from the answer of the start, the approval, the edit or the respond before it.
 *
 * To see what curl answered, a `.curlrc` (in `CURL_HOME`) adds a line with the status and the content type after
 * each answer's body; the examples' text is left as it is.
 */
const root = path.resolve(import.meta.dirname, '..', '..');
const TOKEN = 'curl-examples-test-token';
const run = promisify(execFile);
const ctx = useIntegrationServer({ server: false, catalog: false });

let server: ServerProcess;
let curlHome: string;
/** The shipped assets, and the fixture agent that acts (for the tool call example). */
let catalog: string;

beforeAll(async () => {
  // What `npm start` runs first: the assets and the server brought up to date (the studio is not needed here).
  execFileSync(process.execPath, ['build/build.mjs', 'assets', 'server'], { cwd: root, stdio: 'pipe' });
  catalog = await fs.mkdtemp(path.join(os.tmpdir(), 'curl-examples-generated-'));
  await fs.cp(DEFAULT_GENERATED_DIR, catalog, { recursive: true });
  await fs.writeFile(path.join(catalog, 'manifests', 'agents', `${toolAgent.name}.json`), JSON.stringify(toolAgent));
  server = await spawnServer(
    ctx.env({ AUTH_ENABLED: 'true', SVC_API_TOKEN: TOKEN, GENERATED_DIR: catalog }),
    60_000,
    [],
    compiledLaunch(),
  );
  curlHome = await fs.mkdtemp(path.join(os.tmpdir(), 'curl-examples-'));
  await fs.writeFile(path.join(curlHome, '.curlrc'), 'write-out = "\\n@@curl %{http_code} %{content_type}@@\\n"\n');
}, 120_000);
afterAll(async () => {
  await server?.stop();
  if (curlHome) await fs.rm(curlHome, { recursive: true, force: true });
  if (catalog) await fs.rm(catalog, { recursive: true, force: true });
});

interface Answer {
  status: number;
  type: string;
  body: string;
}

/** Runs a shell text with the real curl; one answer per curl call in it. */
async function shell(text: string, vars: Record<string, string> = {}): Promise<Answer[]> {
  const { stdout } = await run('bash', ['-c', text], {
    env: { PATH: process.env.PATH, CURL_HOME: curlHome, ...vars },
    timeout: 60_000,
  });
  const answers: Answer[] = [];
  const marker = /\n@@curl (\d{3}) ([^@\n]*)@@\n/g;
  let start = 0;
  for (let match; (match = marker.exec(stdout)); start = marker.lastIndex) {
    answers.push({ status: Number(match[1]), type: match[2]!, body: stdout.slice(start, match.index) });
  }
  expect(stdout.slice(start), 'output after the last answer').toBe('');
  return answers;
}

const json = (answer: Answer) => {
  expect(answer.type, answer.body).toMatch(/^application\/json/);
  return JSON.parse(answer.body) as Record<string, unknown>;
};

/** The events of a streamed answer, each checked against the shared event union and its `event:` name. */
function events(answer: Answer): RunEvent[] {
  expect(answer.status, answer.body).toBe(200);
  expect(answer.type).toMatch(/^text\/event-stream/);
  return answer.body.split('\n\n').flatMap((frame) => {
    const fields = new Map<string, string>();
    for (const line of frame.split('\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
    }
    if (!fields.has('data')) return [];
    const event = RunEventSchema.parse(JSON.parse(fields.get('data')!));
    expect(fields.get('event')).toBe(event.type);
    expect(Number(fields.get('id'))).toBeGreaterThan(0);
    return [event];
  });
}
const types = (list: RunEvent[]) => list.map((e) => e.type);

/** What the stand-in model was asked since `from` (its prompts as it read them). */
const promptsSince = (from: number) => ctx.model.prompts.slice(from).map((p) => p.used);

describe('the curl examples of README.md', () => {
  const HOST = 'http://127.0.0.1:8000';
  let examples: Map<string, string>;
  const vars: Record<string, string> = { TOKEN };

  /** `POST /agents/change-review/runs`: the request an example makes, which names it here. */
  const requestOf = (command: string) => {
    const method = /-X\s+([A-Z]+)/.exec(command)?.[1] ?? 'GET';
    return `${method} ${command.split(HOST)[1]!.split(/[\s"']/)[0]}`;
  };
  const example = async (request: string) => {
    const command = examples.get(request);
    expect(command, `README.md has no curl example for ${request}`).toBeDefined();
    return shell(command!.replaceAll(HOST, server.url), vars);
  };

  beforeAll(async () => {
    const readme = await fs.readFile(path.join(root, 'README.md'), 'utf8');
    // A command is a line that starts with curl, and the lines its trailing backslashes continue it on.
    const commands = [...readme.matchAll(/^```sh\n([\s\S]*?)^```/gm)].flatMap(([, block]) =>
      [...block!.matchAll(/^curl\s(?:[^\n]*\\\n)*[^\n]*/gm)].map(([command]) => command),
    );
    examples = new Map(commands.map((command) => [requestOf(command), command]));
    expect(examples.size, 'two examples make the same request').toBe(commands.length);
  });

  it('are each checked below', () => {
    expect([...examples.keys()]).toEqual([
      'POST /agents/change-review/runs',
      'GET /runs/$RUN/stream',
      'POST /graphs/change-review/run',
      'GET /threads',
    ]);
  });

  it('start a run as JSON at once, with where to follow it, and a retry under the same key is the same run', async () => {
    const [answer] = await example('POST /agents/change-review/runs');
    expect(answer!.status).toBe(202);
    const started = json(answer!);
    expect(started).toMatchObject({ status: 'running', last_event_id: 0 });
    expect(started.stream_url).toBe(`/runs/${started.run_id as string}/stream?last_event_id=0`);
    const [again] = await example('POST /agents/change-review/runs');
    expect(json(again!)).toEqual(started);
    vars.RUN = started.run_id as string;
  });

  it('follow that run from its start up to its approval gate', async () => {
    const [answer] = await example('GET /runs/$RUN/stream');
    const followed = events(answer!);
    expect(followed[0]).toMatchObject({ type: 'run_start', run_id: vars.RUN, agent: 'change-review' });
    expect(types(followed)).toEqual(expect.arrayContaining(['node_enter', 'token', 'node_exit']));
    expect(followed.at(-1)).toMatchObject({ type: 'gate_waiting', node: 'gate' });
  });

  it('start a run and follow it in one request', async () => {
    const [answer] = await example('POST /graphs/change-review/run');
    const streamed = events(answer!);
    expect(streamed[0]).toMatchObject({ type: 'run_start', agent: 'change-review' });
    expect(streamed.at(-1)).toMatchObject({ type: 'gate_waiting', node: 'gate' });
  });

  it('list the threads, most recently updated first', async () => {
    const [answer] = await example('GET /threads');
    expect(answer!.status).toBe(200);
    const { items } = json(answer!) as { items: { agent: string; last_message: string }[] };
    expect(items.map((t) => t.last_message)).toEqual([
      'Review: rename the settings loader',
      'Review: rename the config loader',
    ]);
    expect(items.every((t) => t.agent === 'change-review')).toBe(true);
  });
});

describe('the curl examples of the portal page', () => {
  let setup: string;
  let examples: Map<string, string>;
  const vars: Record<string, string> = {};
  let startedThread: string;

  const decode = (html: string) =>
    html.replace(
      /&(quot|#39|amp|lt|gt);/g,
      (_, e: string) => ({ quot: '"', '#39': "'", amp: '&', lt: '<', gt: '>' })[e]!,
    );
  const example = (name: string) => {
    const command = examples.get(name);
    expect(command, `the portal has no example "${name}"`).toBeDefined();
    return shell(`${setup}\n${command!}`, vars);
  };
  /** The follow example, on the `$STREAM_URL` an earlier answer gave. */
  const follow = async () => events((await example('follow'))[0]!);

  beforeAll(async () => {
    const page = await (await fetch(`${server.url}/`)).text();
    const blocks = [...page.matchAll(/<pre( data-example="([^"]+)")?>([^<]*)<\/pre>/g)].map(([, , name, text]) => ({
      name,
      text: decode(text!),
    }));
    const [shellSetup, ...others] = blocks.filter((b) => !b.name);
    expect(others, 'one block without a name: the shell setup').toEqual([]);
    expect(shellSetup!.text).toBe(`export BASE=${server.url}\nexport TOKEN='paste-your-token-here'`);
    setup = shellSetup!.text.replace('paste-your-token-here', TOKEN);
    examples = new Map(blocks.filter((b) => b.name).map((b) => [b.name!, b.text]));
  });

  it('are each checked below (the typed client is made and used by generated-client.int.test.ts)', () => {
    const curl = [...examples].filter(([, text]) => /^curl\s/m.test(text)).map(([name]) => name);
    expect(curl).toEqual([
      'run',
      'start',
      'approve',
      'follow',
      'edit',
      'respond',
      'inbox',
      'tool-call',
      'attach',
      'webhook',
    ]);
    expect([...examples.keys()].filter((name) => !curl.includes(name))).toEqual(['mcp', 'client']);
  });

  it('run an agent and read its stream: run_start with the ids, the phases, and gate_waiting at the end', async () => {
    const [answer] = await example('run');
    const streamed = events(answer!);
    const start = streamed[0]!;
    expect(start).toMatchObject({ type: 'run_start', agent: 'change-review' });
    expect(types(streamed)).toEqual(expect.arrayContaining(['node_enter', 'token', 'node_exit']));
    expect(streamed.at(-1)).toMatchObject({ type: 'gate_waiting', node: 'gate' });
    vars.THREAD_ID = (start as { thread_id: string }).thread_id;
    vars.RUN_ID = (start as { run_id: string }).run_id;
  });

  it('start a run as JSON at once, the same run when sent again with its key, and follow its stream_url', async () => {
    const [answer] = await example('start');
    expect(answer!.status).toBe(202);
    const started = json(answer!);
    expect(started).toMatchObject({ status: 'running' });
    expect(started.stream_url).toBe(`/runs/${started.run_id as string}/stream?last_event_id=0`);
    const [again] = await example('start');
    expect(json(again!)).toEqual(started);

    vars.STREAM_URL = started.stream_url as string;
    const streamed = await follow();
    expect(streamed[0]).toMatchObject({ type: 'run_start', run_id: started.run_id });
    expect(streamed.at(-1)).toMatchObject({ type: 'gate_waiting', node: 'gate' });
    startedThread = started.thread_id as string;
  });

  it('approve the gate of the run example, and follow the resumed run to its end', async () => {
    const [answer] = await example('approve');
    expect(answer!.status).toBe(202);
    const approved = json(answer!);
    expect(approved).toMatchObject({ run_id: vars.RUN_ID, thread_id: vars.THREAD_ID, status: 'running' });
    vars.STREAM_URL = approved.stream_url as string;
    const resumed = await follow();
    expect(resumed[0]).toMatchObject({ type: 'gate_approved', node: 'gate', reason: 'looks good' });
    expect(types(resumed)).toContain('node_exit');
    expect(resumed.at(-1)!.type).toBe('run_done');
  });

  it("edit: an approval whose edited analysis is what the run publishes (at the JSON start's gate)", async () => {
    vars.THREAD_ID = startedThread;
    const [edited] = await example('edit');
    expect(edited!.status).toBe(202);
    vars.STREAM_URL = json(edited!).stream_url as string;
    const resumed = await follow();
    expect(resumed[0]).toMatchObject({ type: 'gate_edited', node: 'gate', reason: 'softer tone' });
    expect(resumed.at(-1)).toMatchObject({ type: 'run_done', output: 'Low risk; one nit.' });
  });

  it('respond: the phase before the gate runs again with the feedback, and the gate waits again', async () => {
    // A run of its own to send back: the run example's is approved by now.
    const [first] = await example('run');
    const start = events(first!)[0] as { thread_id: string };
    vars.THREAD_ID = start.thread_id;
    const asked = ctx.model.prompts.length;
    const [answer] = await example('respond');
    expect(answer!.status).toBe(202);
    vars.STREAM_URL = json(answer!).stream_url as string;
    const resumed = await follow();
    expect(resumed[0]).toMatchObject({ type: 'gate_responded', node: 'gate', to: 'analysis' });
    expect(resumed).toContainEqual(expect.objectContaining({ type: 'node_enter', node: 'analysis' }));
    expect(resumed.at(-1)).toMatchObject({ type: 'gate_waiting', node: 'gate' });
    expect(promptsSince(asked).some((prompt) => prompt.includes('Check the migration too.'))).toBe(true);
  });

  it('list the gates waiting for the caller, oldest first, and who decided what at a thread', async () => {
    const responded = vars.THREAD_ID!;
    const [waiting, decisions] = await example('inbox');
    expect(waiting!.status).toBe(200);
    const inbox = JSON.parse(waiting!.body) as { thread_id: string; gate: string; waiting_since: string }[];
    expect(inbox).toContainEqual(expect.objectContaining({ thread_id: responded, gate: 'gate' }));
    const since = inbox.map((item) => item.waiting_since);
    expect(since).toEqual([...since].sort());
    expect(decisions!.status).toBe(200);
    expect(decisions!.type).toMatch(/^application\/json/);
    expect(JSON.parse(decisions!.body)).toEqual([
      expect.objectContaining({
        thread_id: responded,
        gate: 'gate',
        decision: 'respond',
        response: 'Check the migration too.',
        decided_by: { id: API_TOKEN_ADMIN.id, name: 'api-token' },
      }),
    ]);
  });

  it('decide a tool call: the call runs with exactly the edited arguments', async () => {
    const project = await fs.mkdtemp(path.join(os.tmpdir(), 'curl-examples-project-'));
    ctx.model.toolTurns = [[{ name: 'project__write_file', arguments: { path: 'NOTES.md', content: 'draft' } }]];
    const started = await fetch(`${server.url}/graphs/tool-review/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'note the review', project_path: project }),
    });
    const streamed = events({ status: started.status, type: 'text/event-stream', body: await started.text() });
    const waiting = streamed.at(-1) as { type: string; tool_call: { call_id: string } };
    expect(waiting.type).toBe('tool_waiting');
    vars.THREAD_ID = (streamed[0] as { thread_id: string }).thread_id;
    vars.CALL_ID = waiting.tool_call.call_id;
    const [answer] = await example('tool-call');
    expect(answer!.status).toBe(202);
    await expect
      .poll(() => fs.readFile(path.join(project, 'NOTES.md'), 'utf8').catch(() => ''), { timeout: 15_000 })
      .toBe('Reviewed.');
    await fs.rm(project, { recursive: true, force: true });
  });

  it('re-attach to the run example from its first event, through the approval to its end', async () => {
    const [answer] = await example('attach');
    const replayed = events(answer!);
    expect(replayed[0]).toMatchObject({ type: 'run_start', run_id: vars.RUN_ID });
    expect(types(replayed)).toEqual(expect.arrayContaining(['gate_waiting', 'gate_approved']));
    expect(replayed.at(-1)!.type).toBe('run_done');
  });

  it("the MCP client entry, with the token in its place, connects an MCP client to this server's tools", async () => {
    const entry = JSON.parse(examples.get('mcp')!) as {
      mcpServers: Record<string, { type: string; url: string; headers: Record<string, string> }>;
    };
    const added = entry.mcpServers['agent-workflow']!;
    expect(added).toMatchObject({ type: 'http', url: `${server.url}/mcp` });
    const token = /^Bearer (.+)$/.exec(added.headers.Authorization!)![1]!.replace('paste-your-token-here', TOKEN);
    const mcp = await connectMcp(server.url, token);
    try {
      expect((await mcp.client.listTools()).tools.map((t) => t.name)).toContain('run_agent');
    } finally {
      await mcp.close();
    }
  });

  it('register a webhook on the default project, whose secret is shown once', async () => {
    const [answer] = await example('webhook');
    expect(answer!.status).toBe(201);
    expect(json(answer!)).toMatchObject({
      url: 'https://hooks.example.com/agents',
      events: ['gate.waiting', 'run.completed'],
      project_id: DEFAULT_PROJECT_ID,
      secret: expect.stringMatching(/^whsec_/),
    });
  });
});
