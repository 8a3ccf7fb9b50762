import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Health } from '../../src-server/contracts/health';
import type { RunDetail } from '../../src-server/contracts/runs';
import type { Manifest } from '../../src-server/contracts/assets';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { readEvents, type ReceivedEvent } from '../helpers/sse';

/**
 * Stdio MCP servers run where they cannot read the service's secrets (docs/security.md#stdio-mcp-servers): the server
 * as a process of its own with its secrets in its environment, as a deployment has them, the test MCP server
 * (test/fixtures/mcp-test-server.ts) reading every /proc/<pid>/environ it can, and the refusal and the warning where
 * the machine cannot confine it (an `unshare` that fails, as in a container without the right to make namespaces).
 */
const ctx = useIntegrationServer({ server: false });

/** The tool agent, allowed to scan the machine's environments without asking. */
const scanAgent: Manifest = {
  ...toolAgent,
  name: 'tool-scan',
  tools: {
    ...toolAgent.tools,
    policies: [...toolAgent.tools.policies, { tool: 'mock.environ', policy: 'allow', ask: null }],
  },
};

const secret = (name: string) => `${name.toLowerCase()}-${randomBytes(12).toString('hex')}`;
let catalog: string;
let refusing: string;
let project: string;
const spawned: ServerProcess[] = [];

beforeAll(async () => {
  catalog = await writeFixtureCatalog([scanAgent]);
  refusing = fs.mkdtempSync(path.join(os.tmpdir(), 'no-namespaces-'));
  fs.writeFileSync(
    path.join(refusing, 'unshare'),
    '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n',
    { mode: 0o755 },
  );
});
afterAll(() => {
  fs.rmSync(catalog, { recursive: true, force: true });
  fs.rmSync(refusing, { recursive: true, force: true });
});
beforeEach(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'stdio-sandbox-'));
});
afterEach(async () => {
  for (const child of spawned.splice(0)) await child.stop();
  fs.rmSync(project, { recursive: true, force: true });
});

async function spawn(env: Record<string, string>): Promise<ServerProcess> {
  const server = await ctx.spawn({ GENERATED_DIR: catalog, ...env });
  spawned.push(server);
  return server;
}

/** A PATH on which `unshare` fails: the machine cannot confine a stdio server. */
const withoutNamespaces = () => ({ PATH: `${refusing}:${process.env.PATH}` });

async function health(server: ServerProcess): Promise<Health> {
  return (await (await server.request('/health')).json()) as Health;
}

/** Runs the scanning agent, whose first turn calls `mock.environ` looking for `values`, until it stops. */
async function scanRun(server: ServerProcess, token: string, values: string[]): Promise<ReceivedEvent[]> {
  ctx.model.toolTurns = [[{ name: 'mock__environ', arguments: { values } }]];
  return readEvents(
    await server.request('/graphs/tool-scan/run', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      json: { message: 'look around', project_path: project },
    }),
  );
}

function scanResult(events: ReceivedEvent[]): { read: number; found: { pid: number; value: string }[] } {
  const result = events.filter((e) => e.data.type === 'tool_result').at(-1)!.data as { text: string };
  return JSON.parse(result.text.slice(result.text.indexOf('{'))) as ReturnType<typeof scanResult>;
}

/** A server of its own (tsx compiles it at start) and a stdio server's start: slow on two busy cores. */
const SPAWNING_MS = 90_000;

const linesWith = (server: ServerProcess, text: string) =>
  server
    .output()
    .split('\n')
    .filter((line) => line.includes(text));

describe('a stdio MCP server on a shared server', () => {
  it(
    "finds none of the service's secrets in any /proc/<pid>/environ it can read",
    async () => {
      // With a password, which PostgreSQL's trust authentication (as in CI) ignores.
      const database = new URL(ctx.db.url);
      database.password ||= secret('DATABASE_PASSWORD');
      const secrets = {
        SESSION_SECRET: secret('SESSION_SECRET'),
        SVC_API_TOKEN: secret('SVC_API_TOKEN'),
        METRICS_TOKEN: secret('METRICS_TOKEN'),
        CLOUD_A_API_KEY: secret('CLOUD_A_API_KEY'),
        DATABASE_URL: database.href,
      };
      const server = await spawn({ AUTH_ENABLED: 'true', ...secrets });
      expect((await health(server)).stdio_mcp_servers).toBe('confined');
      const seen = scanResult(
        await scanRun(server, secrets.SVC_API_TOKEN, [...Object.values(secrets), database.password]),
      );
      // It read an environment (its own): the scan works, and finds nothing of the service's.
      expect(seen.read).toBeGreaterThan(0);
      expect(seen.found).toEqual([]);
    },
    SPAWNING_MS,
  );

  it(
    'is refused where the machine cannot confine it: the run says why, the log says it once, /health tells',
    async () => {
      const token = secret('SVC_API_TOKEN');
      const server = await spawn({ AUTH_ENABLED: 'true', SVC_API_TOKEN: token, ...withoutNamespaces() });
      expect((await health(server)).stdio_mcp_servers).toBe('refused');
      for (const attempt of [1, 2]) {
        const events = await scanRun(server, token, ['anything']);
        const runId = (events[0]!.data as { run_id: string }).run_id;
        const run = (await (
          await server.request(`/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } })
        ).json()) as RunDetail;
        expect(run.status, `attempt ${attempt}`).toBe('error');
        expect(run.error_detail).toBe(
          'McpServerError: MCP server "mock" is not started: on a server where people sign in, a stdio MCP server ' +
            "runs only in a PID namespace of its own (so that it cannot read the environment, and the secrets, of the service's " +
            'processes), and this machine does not let the service make one (unshare: unshare failed: Operation not ' +
            'permitted): allow unprivileged user namespaces or run the service as root, or reach the server over http',
        );
      }
      expect(linesWith(server, 'stdio MCP servers are refused')).toHaveLength(1);
    },
    SPAWNING_MS,
  );
});

describe('a stdio MCP server on the desktop, where the machine cannot confine it', () => {
  it(
    'runs unconfined with the per-launch token, where the warning of the log and of /health (the Settings) is true',
    async () => {
      const sessionSecret = secret('SESSION_SECRET');
      const server = await spawn({ AUTH_ENABLED: 'true', SESSION_SECRET: sessionSecret, ...withoutNamespaces() });
      expect((await health(server)).stdio_mcp_servers).toBe('unconfined');
      expect(linesWith(server, 'stdio MCP servers run unconfined')).toHaveLength(1);
      const token = /#token=([\w-]+)/.exec(server.output())![1]!;
      const seen = scanResult(await scanRun(server, token, [sessionSecret]));
      expect(seen.found).toContainEqual({ pid: server.child.pid, value: sessionSecret });
    },
    SPAWNING_MS,
  );

  it(
    'runs unconfined with authentication off',
    async () => {
      const server = await spawn({ AUTH_ENABLED: 'false', ...withoutNamespaces() });
      expect((await health(server)).stdio_mcp_servers).toBe('unconfined');
    },
    SPAWNING_MS,
  );
});
