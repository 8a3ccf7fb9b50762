import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ApprovalItem } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { addUser, signSession } from '../helpers/sessions';
import { until } from '../helpers/until';
import { connectMcp, type TestMcpClient } from '../mcp/mcp-client';

/**
 * An MCP task (docs/mcp.md#runs-as-tasks) as a team runs the service: started on one process, read from a second
 * session on another, outliving a kill -9 of the process that created it, moved on by an approval through the HTTP
 * API, and its result read where the client happens to be.
 */
const ctx = useIntegrationServer({ server: false });
const SECRET = 'mcp-tasks-session-secret-0123456789';
const ENV = { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: 'mcp-tasks-admin-token-0123456789' };

let sql: pg.Pool;
let ann: string;
let mallory: string;
let first: ServerProcess | undefined;
let second: ServerProcess | undefined;
let restarted: ServerProcess | undefined;
const clients: TestMcpClient[] = [];

beforeAll(async () => {
  sql = new pg.Pool({ connectionString: ctx.db.url });
  [first, second] = await Promise.all([ctx.spawn(ENV), ctx.spawn(ENV)]);
  const annId = await addUser(sql, 'Ann', [['project', DEFAULT_PROJECT_ID, 'member']]);
  const malloryId = await addUser(sql, 'Mallory', []);
  [ann, mallory] = await Promise.all([signSession(annId, SECRET, '1h', 'Ann'), signSession(malloryId, SECRET, '1h')]);
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await Promise.all([first, second, restarted].map((server) => server?.stop()));
  await sql?.end();
});

async function connect(server: ServerProcess, token: string) {
  const client = await connectMcp(server.url, token);
  clients.push(client);
  return client;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('an MCP task across processes', () => {
  it('is read from another process, outlives a kill -9 of its own, and moves on with an approval anywhere', async () => {
    ctx.model.reply(['Reviewed ', 'across ', 'processes.'], 5);
    const starter = await connect(first!, ann);
    const { task } = await starter.client.request(
      {
        method: 'tools/call',
        params: { name: 'run_agent', arguments: { agent: 'review', message: 'review as a task' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    expect(task.status).toBe('working');

    const reader = await connect(second!, ann);
    await until(
      async () =>
        (await reader.client.experimental.tasks.getTask(task.taskId)).status === 'input_required' || undefined,
    );

    // The process that created the task dies; the task is the run's, which waits at its gate in PostgreSQL.
    await first!.stop('SIGKILL');
    restarted = await ctx.spawn(ENV);
    const afterRestart = await connect(restarted, ann);
    expect((await afterRestart.client.experimental.tasks.getTask(task.taskId)).status).toBe('input_required');
    const stranger = await connect(restarted, mallory);
    await expect(stranger.client.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/Task not found/);

    const inbox = (await (await restarted.request('/approvals', { headers: bearer(ann) })).json()) as ApprovalItem[];
    const { thread_id: threadId } = inbox.find((item) => item.message === 'review as a task')!;
    const approved = await restarted.request(`/threads/${threadId}/gates/gate/approve`, {
      method: 'POST',
      json: { reason: 'after the restart' },
      headers: bearer(ann),
    });
    expect(approved.status).toBe(202);

    await until(
      async () => (await reader.client.experimental.tasks.getTask(task.taskId)).status === 'completed' || undefined,
    );
    const result = await reader.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({
      status: 'completed',
      output: 'Reviewed across processes.',
      decisions: [expect.objectContaining({ decision: 'approve', by: 'Ann', reason: 'after the restart' })],
    });
  });
});
