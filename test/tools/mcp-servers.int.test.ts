import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { node } from '@opentelemetry/sdk-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { lookup, LookupAddress } from 'node:dns';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestMcpHttpServer, type TestMcpHttpServer } from '../fixtures/mcp-test-server';
import { processesWith } from '../helpers/processes';
import { until } from '../helpers/until';
import { MAX_TOOL_RESULT_CHARS, type McpServer } from '../../src-server/contracts/tools';
import { captureLogs } from '../../src-server/log';
import { McpServerError, McpServers, type McpServersOptions } from '../../src-server/tools/mcp-servers';
import { probeStdioSandbox, stdioServersOf, type StdioServers } from '../../src-server/tools/mcp-stdio-sandbox';

const root = path.resolve(import.meta.dirname, '..', '..');
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** The test server (test/fixtures/mcp-test-server.ts) as an asset would declare it over stdio. */
const testServer: McpServer = {
  name: 'test',
  transport: 'stdio',
  command: process.execPath,
  args: ['--import', tsxLoader, path.join(root, 'test/fixtures/mcp-test-server-process.ts')],
  env: ['MCP_TEST_TOKEN'],
};

const serviceEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  LANG: 'C.UTF-8',
  USER: 'service-user',
  SESSION_SECRET: 'session-secret-never-shared',
  MCP_TEST_TOKEN: 'token-for-the-test-server',
  MCP_HTTP_AUTH: 'Bearer http-token-123',
};

/** How this machine runs stdio servers, as the service decides it: confined where it can (here, as in CI). */
let stdio: StdioServers;
beforeAll(async () => {
  stdio = stdioServersOf(await probeStdioSandbox(process.env), false);
});

const open: McpServers[] = [];
function servers(options: Partial<McpServersOptions> = {}): McpServers {
  // The declared variables from the environment given, as the service reads them when no secret sets one.
  const env: Readonly<Record<string, string | undefined>> = options.env ?? serviceEnv;
  const created = new McpServers({
    env: serviceEnv,
    variables: async (_project, names) => Object.fromEntries(names.map((name) => [name, env[name]])),
    idleMs: 60_000,
    callTimeoutMs: 10_000,
    allowedPrivateHosts: [],
    binDirs: [],
    stdio,
    ...options,
  });
  open.push(created);
  return created;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

const never = new AbortController().signal;

/** Whether the test server's process of that instance still runs on this machine. */
const isRunning = (instance: string) => processesWith(`mcp-test-server ${instance}`).length > 0;

/** Which process of the test server answers (tools `instance`). */
async function instanceOf(mcp: McpServers, scope = 'project-1'): Promise<string> {
  const result = await mcp.call(scope, testServer, null, 'instance', {}, never);
  expect(result.is_error).toBe(false);
  return result.text;
}

describe('a stdio MCP server', () => {
  it('lists its tools under the server name, with MCP annotations and their defaults', async () => {
    const tools = await servers().tools('project-1', testServer, null, never);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName['test.echo']).toMatchObject({
      server: 'test',
      tool: 'echo',
      description: 'Answers with the text it was given.',
      annotations: { read_only: true, idempotent: true, destructive: false },
    });
    expect(byName['test.echo']!.inputSchema).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' } },
    });
    expect(byName['test.slow']!.annotations).toEqual({ read_only: false, idempotent: true, destructive: false });
    expect(byName['test.crash']!.annotations).toEqual({ read_only: false, idempotent: false, destructive: true });
  });

  it('calls a tool and joins its text; other content is a note, a long answer is cut, a tool error is carried', async () => {
    const mcp = servers();
    expect(await mcp.call('project-1', testServer, null, 'echo', { text: 'hello' }, never)).toEqual({
      text: 'hello',
      is_error: false,
    });
    expect(await mcp.call('project-1', testServer, null, 'mixed', {}, never)).toEqual({
      text: 'before\n[image omitted]\n[resource file:///notes.txt]\nafter',
      is_error: false,
    });
    const big = await mcp.call('project-1', testServer, null, 'big', { chars: MAX_TOOL_RESULT_CHARS + 500 }, never);
    expect(big.text.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
    expect(big.text).toMatch(/\n\[cut: \d+ of 66036 characters not shown\]$/);
    expect(await mcp.call('project-1', testServer, null, 'fail', {}, never)).toEqual({
      text: 'the tool failed on purpose',
      is_error: true,
    });
  });

  it('gets PATH, HOME, LANG and its declared variables from the service, nothing else', async () => {
    const result = await servers().call('project-1', testServer, null, 'env', { name: 'MCP_TEST_TOKEN' }, never);
    expect(JSON.parse(result.text)).toEqual({
      session_secret: 'absent',
      value: 'token-for-the-test-server',
      names: ['HOME', 'LANG', 'MCP_TEST_TOKEN', 'PATH'],
    });
  });

  it('is refused when a variable it names is not set, naming the variable', async () => {
    const mcp = servers({ env: { ...serviceEnv, MCP_TEST_TOKEN: undefined } });
    const listing = mcp.tools('project-1', testServer, null, never);
    await expect(listing).rejects.toBeInstanceOf(McpServerError);
    await expect(listing).rejects.toThrow(/"test" needs the environment variable MCP_TEST_TOKEN/);
    const call = await mcp.call('project-1', testServer, null, 'echo', { text: 'x' }, never);
    expect(call.is_error).toBe(true);
    expect(call.text).toMatch(/MCP_TEST_TOKEN/);
  });

  it('is refused when its arguments need the project folder and the run has none', async () => {
    const needsFolder: McpServer = { ...testServer, args: [...testServer.args, '{project_path}'] };
    await expect(servers().tools('project-1', needsFolder, null, never)).rejects.toThrow(
      /"test" needs the run's project folder/,
    );
  });

  it('is an McpServerError naming the server when its command does not exist', async () => {
    const missing: McpServer = { ...testServer, command: 'no-such-mcp-server' };
    const listing = servers({ binDirs: [path.join(root, 'node_modules', '.bin')] }).tools(
      'project-1',
      missing,
      null,
      never,
    );
    await expect(listing).rejects.toBeInstanceOf(McpServerError);
    await expect(listing).rejects.toThrow(
      'MCP server "test" could not be started: its command no-such-mcp-server is in neither the service\'s ' +
        'node_modules/.bin nor its PATH',
    );
  });

  it('is an McpServerError within the time limit when it never answers its start, and its process is ended', async () => {
    const marker = `mute-${randomUUID()}`;
    const mute: McpServer = {
      ...testServer,
      command: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)', marker],
    };
    const mcp = servers({ callTimeoutMs: 1000 });
    const started = Date.now();
    await expect(mcp.tools('project-1', mute, null, never)).rejects.toThrow(
      'MCP server "test" did not start within 1000 ms',
    );
    expect(Date.now() - started).toBeLessThan(1800);
    expect(processesWith(marker)).not.toEqual([]);
    await mcp.close();
    expect(processesWith(marker)).toEqual([]);
  });

  it('logs its stderr under svc.mcp, prefixed with its name', async () => {
    const lines: string[] = [];
    const restore = captureLogs((line) => lines.push(line));
    try {
      const instance = await instanceOf(servers());
      await until(async () =>
        lines.some((l) => l.includes(`svc.mcp test: mcp-test-server ready (instance ${instance})`)) ? true : undefined,
      );
    } finally {
      restore();
    }
  });

  it('answers a call that outlasts the time limit with an error result, on time, and keeps serving', async () => {
    // Long enough for the server's start (tsx compiles the fixture), which the same limit covers.
    const mcp = servers({ callTimeoutMs: 5000 });
    const instance = await instanceOf(mcp);
    const started = Date.now();
    const result = await mcp.call('project-1', testServer, null, 'slow', { ms: 20_000 }, never);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4900);
    expect(Date.now() - started).toBeLessThan(6500);
    expect(result).toEqual({
      text: 'MCP server "test" did not answer within 5000 ms (calling slow)',
      is_error: true,
    });
    expect(await instanceOf(mcp)).toBe(instance);
  });

  it('answers a call whose server died with an error result, and starts the server again at the next call', async () => {
    const mcp = servers();
    const first = await instanceOf(mcp);
    const crash = await mcp.call('project-1', testServer, null, 'crash', {}, never);
    expect(crash.is_error).toBe(true);
    expect(crash.text).toMatch(/"test" stopped before it answered/);
    const second = await instanceOf(mcp);
    expect(second).not.toBe(first);
    expect(isRunning(first)).toBe(false);
    expect(await mcp.call('project-1', testServer, null, 'echo', { text: 'again' }, never)).toEqual({
      text: 'again',
      is_error: false,
    });
  });

  it('throws the reason when the caller aborts a call', async () => {
    const mcp = servers();
    await instanceOf(mcp);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('run cancelled')), 200);
    const started = Date.now();
    await expect(mcp.call('project-1', testServer, null, 'slow', { ms: 20_000 }, controller.signal)).rejects.toThrow(
      'run cancelled',
    );
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('shares a process within one scope only', async () => {
    const mcp = servers();
    const [a, b] = await Promise.all([instanceOf(mcp, 'project-1'), instanceOf(mcp, 'project-1')]);
    expect(a).toBe(b);
    expect(await instanceOf(mcp, 'project-2')).not.toBe(a);
  });

  it("reads its variables' values for the scope at each use: a changed value starts a process that has it", async () => {
    const values: Record<string, string> = { 'project-1': 'token-of-project-1', 'project-2': 'token-of-project-2' };
    const asked: [string, readonly string[]][] = [];
    const mcp = servers({
      variables: async (project, names) => {
        asked.push([project, names]);
        return Object.fromEntries(names.map((name) => [name, values[project]]));
      },
    });
    const valueIn = async (scope: string) =>
      (
        JSON.parse((await mcp.call(scope, testServer, null, 'env', { name: 'MCP_TEST_TOKEN' }, never)).text) as {
          value: string;
        }
      ).value;
    expect([await valueIn('project-1'), await valueIn('project-2')]).toEqual([
      'token-of-project-1',
      'token-of-project-2',
    ]);
    expect(asked).toEqual([
      ['project-1', ['MCP_TEST_TOKEN']],
      ['project-2', ['MCP_TEST_TOKEN']],
    ]);
    const first = await instanceOf(mcp, 'project-1');
    expect(await instanceOf(mcp, 'project-1')).toBe(first);
    values['project-1'] = 'token-of-project-1-changed';
    expect(await valueIn('project-1')).toBe('token-of-project-1-changed');
    expect(await instanceOf(mcp, 'project-1')).not.toBe(first);
    // A server that names no variable is asked nothing.
    asked.length = 0;
    await mcp.call('project-1', { ...testServer, env: [] }, null, 'echo', { text: 'x' }, never);
    expect(asked).toEqual([]);
  });

  it('closes a server unused for idleMs (its process exits), and starts it again when used', async () => {
    const mcp = servers({ idleMs: 500 });
    const instance = await instanceOf(mcp);
    expect(isRunning(instance)).toBe(true);
    await until(async () => (isRunning(instance) ? undefined : true), 10_000);
    const next = await instanceOf(mcp);
    expect(next).not.toBe(instance);
  });

  it('stops every process on close', async () => {
    const mcp = servers();
    const instances = [await instanceOf(mcp, 'project-1'), await instanceOf(mcp, 'project-2')];
    expect(instances.filter(isRunning)).toEqual(instances);
    await mcp.close();
    expect(instances.filter(isRunning)).toEqual([]);
    const after = await mcp.call('project-1', testServer, null, 'echo', { text: 'x' }, never);
    expect(after.is_error).toBe(true);
  });
});

describe('the confinement of a stdio MCP server', () => {
  /** A process of the service's, a secret in its environment, as the service and its parents hold theirs. */
  let neighbour: ChildProcess;
  const secret = `neighbour-secret-${randomUUID()}`;
  beforeAll(async () => {
    neighbour = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      env: { PATH: process.env.PATH, SESSION_SECRET: secret },
      stdio: 'ignore',
    });
    await new Promise((resolve) => neighbour.once('spawn', resolve));
  });
  afterAll(() => neighbour.kill('SIGKILL'));

  /** What the test server finds when it reads every /proc/<pid>/environ it can. */
  async function scan(mcp: McpServers): Promise<{ read: number; found: { pid: number; value: string }[] }> {
    const result = await mcp.call('project-1', testServer, null, 'environ', { values: [secret] }, never);
    expect(result.is_error).toBe(false);
    return JSON.parse(result.text) as { read: number; found: { pid: number; value: string }[] };
  }

  it('is in force on this machine', () => {
    expect(stdio).toMatchObject({ mode: 'confined' });
  });

  it("reads the environment of none of the service's processes: only its own is in sight", async () => {
    expect(await scan(servers())).toEqual({ read: 1, found: [] });
  });

  it('ends, with the server, every process it started: its PID namespace ends with it', async () => {
    const mcp = servers();
    const marker = `left-behind-${randomUUID()}`;
    expect(await mcp.call('project-1', testServer, null, 'leave_behind', { marker }, never)).toMatchObject({
      is_error: false,
    });
    await until(async () => (processesWith(marker).length > 0 ? true : undefined));
    await mcp.close();
    await until(async () => (processesWith(marker).length === 0 ? true : undefined), 5000);
  });

  describe('where the machine cannot confine it', () => {
    const unavailable = { unavailable: 'unshare: unshare failed: Operation not permitted' };

    it('is refused on a shared server, saying why in the call and, once, in the log', async () => {
      const lines: string[] = [];
      const restore = captureLogs((line) => lines.push(line));
      let refused: StdioServers;
      try {
        refused = stdioServersOf(unavailable, true);
      } finally {
        restore();
      }
      const why =
        'on a server where people sign in, a stdio MCP server runs only in a PID namespace of its own (so that it ' +
        "cannot read the environment, and the secrets, of the service's processes), and this machine does not let " +
        'the service make one (unshare: unshare failed: Operation not permitted): allow unprivileged user ' +
        'namespaces or run the service as root, or reach the server over http';
      expect(lines).toEqual([expect.stringContaining(`WARNING svc.mcp stdio MCP servers are refused: ${why}`)]);
      const mcp = servers({ stdio: refused });
      await expect(mcp.tools('project-1', testServer, null, never)).rejects.toThrow(
        `MCP server "test" is not started: ${why}`,
      );
      expect(await mcp.call('project-1', testServer, null, 'echo', { text: 'x' }, never)).toEqual({
        text: `MCP server "test" is not started: ${why} (calling echo)`,
        is_error: true,
      });
    });

    it('runs unconfined on the desktop, where the warning is true: the secrets of its neighbours are in sight', async () => {
      const lines: string[] = [];
      const restore = captureLogs((line) => lines.push(line));
      let unconfined: StdioServers;
      try {
        unconfined = stdioServersOf(unavailable, false);
      } finally {
        restore();
      }
      expect(unconfined.mode).toBe('unconfined');
      expect(lines).toEqual([
        expect.stringContaining(
          'WARNING svc.mcp this machine does not let the service give a stdio MCP server a PID namespace of its own ' +
            '(unshare: unshare failed: Operation not permitted): stdio MCP servers run unconfined',
        ),
      ]);
      const seen = await scan(servers({ stdio: unconfined }));
      expect(seen.found).toEqual([{ pid: neighbour.pid, value: secret }]);
    });
  });
});

describe('an http MCP server', () => {
  let http: TestMcpHttpServer;
  beforeAll(async () => {
    http = await startTestMcpHttpServer(serviceEnv.MCP_HTTP_AUTH);
  });
  afterAll(() => http.close());

  const declared = (): McpServer => ({
    name: 'remote',
    transport: 'http',
    url: http.url,
    headers: { Authorization: 'MCP_HTTP_AUTH' },
  });

  it('is reached when its private host is allowed, its header read from the environment', async () => {
    const mcp = servers({ allowedPrivateHosts: ['127.0.0.1'] });
    const tools = await mcp.tools('project-1', declared(), null, never);
    expect(tools.map((t) => t.name)).toContain('remote.echo');
    expect(await mcp.call('project-1', declared(), null, 'echo', { text: 'over http' }, never)).toEqual({
      text: 'over http',
      is_error: false,
    });
  });

  it('connects to the addresses it checked, whatever DNS answers later (rebinding)', async () => {
    const port = Number(new URL(http.url).port);
    // Another server where the name's later answer leads: no request may reach it.
    const elsewhere = await startTestMcpHttpServer(serviceEnv.MCP_HTTP_AUTH, { host: '127.0.0.2', port });
    try {
      const answers = ['127.0.0.1', '127.0.0.2'];
      let asked = 0;
      const changing = ((_host: string, _options: object, callback: (e: null, a: LookupAddress[]) => void) =>
        callback(null, [{ address: answers[Math.min(asked++, 1)]!, family: 4 }])) as unknown as typeof lookup;
      const mcp = servers({ allowedPrivateHosts: ['mcp.rebind.test'], resolve: changing });
      const rebinding: McpServer = {
        name: 'remote',
        transport: 'http',
        url: `http://mcp.rebind.test:${port}/mcp`,
        headers: { Authorization: 'MCP_HTTP_AUTH' },
      };
      const before = http.requests();
      expect((await mcp.tools('project-1', rebinding, null, never)).map((t) => t.name)).toContain('remote.echo');
      for (const text of ['one', 'two']) {
        expect(await mcp.call('project-1', rebinding, null, 'echo', { text }, never)).toEqual({
          text,
          is_error: false,
        });
      }
      expect(asked).toBe(1);
      expect(http.requests()).toBeGreaterThan(before + 2);
      expect(elsewhere.requests()).toBe(0);
    } finally {
      await elsewhere.close();
    }
  });

  it('carries the trace of the tool call under way to the server (traceparent), and nothing while tracing is off', async () => {
    const mcp = servers({ allowedPrivateHosts: ['127.0.0.1'] });
    await mcp.call('project-1', declared(), null, 'echo', { text: 'untraced' }, never);
    expect(http.traceparents()).toEqual([]);
    // What a started SDK registers: a tracer provider, the W3C propagator, a context that follows async calls.
    const provider = new node.NodeTracerProvider();
    provider.register();
    try {
      const span = provider.getTracer('test').startSpan('execute_tool remote.echo');
      await context.with(trace.setSpan(ROOT_CONTEXT, span), () =>
        mcp.call('project-1', declared(), null, 'echo', { text: 'traced' }, never),
      );
      span.end();
      const { traceId, spanId } = span.spanContext();
      expect(http.traceparents().at(-1)).toBe(`00-${traceId}-${spanId}-01`);
    } finally {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    }
  });

  it('is refused on a loopback address that is not allowed, before any request', async () => {
    const before = http.requests();
    const mcp = servers({ allowedPrivateHosts: ['git.internal'] });
    const listing = mcp.tools('project-1', declared(), null, never);
    await expect(listing).rejects.toBeInstanceOf(McpServerError);
    await expect(listing).rejects.toThrow(
      /"remote": http:\/\/127\.0\.0\.1:\d+ leads to an address on the server's own network/,
    );
    const localhost = { ...declared(), url: http.url.replace('127.0.0.1', 'localhost') };
    await expect(mcp.tools('project-1', localhost, null, never)).rejects.toThrow(/own network/);
    const call = await mcp.call('project-1', declared(), null, 'echo', { text: 'x' }, never);
    expect(call.is_error).toBe(true);
    expect(http.requests()).toBe(before);
  });

  it('is refused when the variable of a header is not set, naming it', async () => {
    const mcp = servers({ allowedPrivateHosts: ['127.0.0.1'], env: { ...serviceEnv, MCP_HTTP_AUTH: undefined } });
    await expect(mcp.tools('project-1', declared(), null, never)).rejects.toThrow(
      /"remote" needs the environment variable MCP_HTTP_AUTH for its header Authorization/,
    );
  });
});

describe('the published filesystem MCP server', () => {
  let folder: string;
  beforeAll(async () => {
    folder = await realpath(await mkdtemp(path.join(tmpdir(), 'mcp-fs-')));
    await writeFile(path.join(folder, 'notes.txt'), 'notes of the project\n');
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  it('is found in binDirs by its bare name and reads a file of the project folder', async () => {
    const files: McpServer = {
      name: 'files',
      transport: 'stdio',
      command: 'mcp-server-filesystem',
      args: ['{project_path}'],
      env: [],
    };
    const mcp = servers({ binDirs: [path.join(root, 'node_modules', '.bin')] });
    const tools = await mcp.tools('project-1', files, folder, never);
    const read = tools.find((t) => t.tool === 'read_text_file') ?? tools.find((t) => t.tool === 'read_file');
    expect(read?.annotations.read_only).toBe(true);
    const result = await mcp.call(
      'project-1',
      files,
      folder,
      read!.tool,
      { path: path.join(folder, 'notes.txt') },
      never,
    );
    expect(result).toEqual({ text: 'notes of the project\n', is_error: false });
    const outside = await mcp.call('project-1', files, folder, read!.tool, { path: '/etc/hostname' }, never);
    expect(outside.is_error).toBe(true);
  });
});
