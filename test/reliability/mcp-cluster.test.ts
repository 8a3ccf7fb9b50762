import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { startNginx, type Nginx } from '../helpers/nginx';
import type { ServerProcess } from '../helpers/process';
import { connectMcp } from '../mcp/mcp-client';

/**
 * The MCP server (docs/mcp.md#sessions-on-any-process) as a team runs the service: three processes on one PostgreSQL
 * behind nginx, round robin, no sticky sessions. One MCP session is used through all three, and the answer to a
 * question asked inside a call reaches another process than the one running the call.
 */
const ctx = useIntegrationServer({ server: false });
const API_TOKEN = 'mcp-cluster-admin-token-0123456789';
const ENV = { AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN, SESSION_SECRET: 'mcp-cluster-session-secret-0123456789' };

let servers: ServerProcess[] = [];
let nginx: Nginx | undefined;

beforeAll(async () => {
  servers = await Promise.all([ctx.spawn(ENV), ctx.spawn(ENV), ctx.spawn(ENV)]);
  nginx = await startNginx(servers.map((s) => s.url));
});

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(servers.map((s) => s.stop()));
});

/** The process whose log has a line with all of `parts`. */
const loggedBy = (...parts: string[]) =>
  servers.filter((server) =>
    server
      .output()
      .split('\n')
      .some((line) => parts.every((part) => line.includes(part))),
  );

describe('the MCP server behind a round-robin balancer', () => {
  it('serves one session from every process, and takes an answer on another process than the call', async () => {
    ctx.model.reply(['Reviewed ', 'through ', 'nginx.'], 5);
    const mcp = await connectMcp(nginx!.url, API_TOKEN, async () => ({
      action: 'accept',
      content: { decision: 'approve', reason: 'from any process' },
    }));
    try {
      // Round robin sends consecutive requests to different processes: the session holds on all three.
      for (let i = 0; i < servers.length; i++) {
        expect((await mcp.client.listTools()).tools.map((t) => t.name)).toContain('run_agent');
      }
      const result = await mcp.call('run_agent', { agent: 'review', message: 'review through nginx' });
      const run = result.structuredContent as { run_id: string; status: string; decisions: { by: string }[] };
      expect(run).toMatchObject({ status: 'completed', output: 'Reviewed through nginx.' });
      expect(run.decisions).toEqual([expect.objectContaining({ decision: 'approve', reason: 'from any process' })]);

      const asking = loggedBy('svc.api', 'asked', `run=${run.run_id}`, 'question=');
      const deciding = loggedBy('svc.api', 'gate gate approve', `run=${run.run_id}`);
      expect(asking).toHaveLength(1);
      expect(deciding).toHaveLength(1);
      expect(deciding[0]).not.toBe(asking[0]);
    } finally {
      await mcp.close();
    }
  });
});
