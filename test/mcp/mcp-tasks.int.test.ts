import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallToolResultSchema, CreateTaskResultSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ApprovalItem } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import { threePeople } from '../helpers/sessions';
import { until } from '../helpers/until';
import { connectMcp, type Answerer, type TestMcpClient } from './mcp-client';

/**
 * `run_agent` as an MCP task (docs/mcp.md#runs-as-tasks), with the official SDK's client against the real server and
 * PostgreSQL: the task id at once, its status read from the run in any of the person's sessions, a decision taken
 * elsewhere moving it on, the question asked on the stream of a waiting `tasks/result`, a cancel, and another
 * person's `tasks/get` read as a task that does not exist. The task across processes and a restart is in
 * test/reliability/mcp-tasks.test.ts.
 */
const SECRET = 'a-session-secret-for-the-mcp-task-tests-0123456789';
const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET } });

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

/** `tools/call` of run_agent made as a task: the CreateTaskResult the server answers at once. */
async function startTask(mcp: TestMcpClient, message: string) {
  const created = await mcp.client.request(
    {
      method: 'tools/call',
      params: { name: 'run_agent', arguments: { agent: 'review', message }, task: { ttl: 3_600_000 } },
    },
    CreateTaskResultSchema,
  );
  return created.task;
}

const statusOf = async (mcp: TestMcpClient, taskId: string) =>
  (await mcp.client.experimental.tasks.getTask(taskId)).status;

describe('run_agent as a task', () => {
  it('answers a task id at once; another session sees input_required; a decision elsewhere moves it on', async () => {
    ctx.model.reply(['Task ', 'review.']);
    const starter = await connect(ann);
    const { tools } = await starter.client.listTools();
    expect(tools.find((tool) => tool.name === 'run_agent')!.execution).toEqual({ taskSupport: 'optional' });
    const task = await startTask(starter, 'review as a task');
    expect(task).toMatchObject({ status: 'working', ttl: 3_600_000, pollInterval: 1000 });
    expect(task.taskId).toMatch(/^[\w-]{20,}$/);

    const other = await connect(ann);
    await until(async () => (await statusOf(other, task.taskId)) === 'input_required' || undefined);
    const listed = await other.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(task.taskId);

    // The run is an ordinary one: the HTTP API decides it, and the task moves on by itself.
    const inbox = (await (
      await ctx.server.request('/approvals', { headers: { authorization: `Bearer ${ann}` } })
    ).json()) as ApprovalItem[];
    const threadId = inbox.find((item) => item.message === 'review as a task')!.thread_id;
    const approved = await ctx.server.request(`/threads/${threadId}/gates/gate/approve`, {
      method: 'POST',
      json: { reason: 'read it' },
      headers: { authorization: `Bearer ${ann}` },
    });
    expect(approved.status).toBe(202);
    await until(async () => (await statusOf(other, task.taskId)) === 'completed' || undefined);
    const result = await other.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ status: 'completed', output: 'Task review.' });
    expect(result._meta).toMatchObject({ 'io.modelcontextprotocol/related-task': { taskId: task.taskId } });
  });

  it('asks the caller at the stop on the stream of tasks/result, and gives the result after her answer', async () => {
    ctx.model.reply(['Asked ', 'in ', 'the ', 'task.']);
    const asked: ElicitRequest['params'][] = [];
    const mcp = await connect(ann, async (params) => {
      asked.push(params);
      return { action: 'accept', content: { decision: 'approve', reason: 'approved in the task' } };
    });
    const task = await startTask(mcp, 'ask me in the task');
    await until(async () => (await statusOf(mcp, task.taskId)) === 'input_required' || undefined);
    const result = await mcp.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
      timeout: 30_000,
    });
    expect(asked).toHaveLength(1);
    expect(asked[0]!.message).toContain('Asked in the task.');
    expect(asked[0]!._meta).toMatchObject({ 'io.modelcontextprotocol/related-task': { taskId: task.taskId } });
    expect(result.structuredContent).toMatchObject({
      status: 'completed',
      decisions: [expect.objectContaining({ decision: 'approve', by: 'Ann', reason: 'approved in the task' })],
    });
    expect(await statusOf(mcp, task.taskId)).toBe('completed');
  });

  it('cancels its run with tasks/cancel', async () => {
    ctx.model.reply(['To ', 'be ', 'cancelled.']);
    const mcp = await connect(ann);
    const task = await startTask(mcp, 'cancel me');
    await until(async () => (await statusOf(mcp, task.taskId)) === 'input_required' || undefined);
    const cancelled = await mcp.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    const result = await mcp.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ status: 'cancelled' });
    await expect(mcp.client.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/terminal status: cancelled/);
  });

  it("is its person's only: another person's tasks/get, tasks/result and tasks/cancel read as a missing task", async () => {
    ctx.model.reply(['Private ', 'task.']);
    const owner = await connect(ann);
    const task = await startTask(owner, 'mine');
    const stranger = await connect(mallory);
    await expect(stranger.client.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/Task not found/);
    await expect(stranger.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).rejects.toThrow(
      /Task not found/,
    );
    await expect(stranger.client.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/Task not found/);
    expect((await stranger.client.experimental.tasks.listTasks()).tasks).toEqual([]);
    await expect(stranger.client.experimental.tasks.getTask('no-such-task')).rejects.toThrow(/Task not found/);
    await until(async () => (await statusOf(owner, task.taskId)) === 'input_required' || undefined);
    await owner.client.experimental.tasks.cancelTask(task.taskId);
  });

  it("a viewer's task is refused as her run would be", async () => {
    const viewer = await connect(vera);
    const refused = await viewer.client.request(
      { method: 'tools/call', params: { name: 'run_agent', arguments: { agent: 'review', message: 'x' }, task: {} } },
      CreateTaskResultSchema,
    );
    const { task } = refused;
    expect(task).toMatchObject({
      status: 'failed',
      statusMessage: 'you are not member or higher on any project; this needs member or higher',
    });
    const result = await viewer.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect((result.content[0] as { text: string }).text).toBe(task.statusMessage);
  });
});

describe('decide_approval as a task', () => {
  it('follows the run the decision resumes to its end, through callToolStream, output schema and all', async () => {
    ctx.model.reply(['Decided ', 'as ', 'a ', 'task.']);
    const mcp = await connect(ann);
    const task = await startTask(mcp, 'decide me as a task');
    await until(async () => (await statusOf(mcp, task.taskId)) === 'input_required' || undefined);
    const inbox = (await (
      await ctx.server.request('/approvals', { headers: { authorization: `Bearer ${ann}` } })
    ).json()) as ApprovalItem[];
    const threadId = inbox.find((item) => item.message === 'decide me as a task')!.thread_id;
    // The client learns from the tool list which tools take tasks, as a client does before it calls one.
    await mcp.client.listTools();
    const kinds: string[] = [];
    let final: unknown;
    for await (const message of mcp.client.experimental.tasks.callToolStream(
      {
        name: 'decide_approval',
        arguments: { thread_id: threadId, gate: 'gate', decision: 'approve', reason: 'as a task' },
        task: {},
      },
      CallToolResultSchema,
    )) {
      kinds.push(message.type);
      if (message.type === 'result') final = message.result.structuredContent;
      if (message.type === 'error') throw message.error;
    }
    expect(kinds[0]).toBe('taskCreated');
    expect(kinds.at(-1)).toBe('result');
    expect(final).toEqual({ run_id: expect.any(String), thread_id: threadId, status: 'completed' });
    const run = await mcp.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(run.structuredContent).toMatchObject({ status: 'completed', output: 'Decided as a task.' });
  });

  it('is a failed task, with the reason, when the stop is not pending', async () => {
    const mcp = await connect(ann);
    const refused = await mcp.client.request(
      {
        method: 'tools/call',
        params: {
          name: 'decide_approval',
          arguments: { thread_id: '00000000-0000-4000-8000-00000000dead', gate: 'gate', decision: 'approve' },
          task: {},
        },
      },
      CreateTaskResultSchema,
    );
    expect(refused.task).toMatchObject({
      status: 'failed',
      statusMessage: 'thread 00000000-0000-4000-8000-00000000dead not found',
    });
  });
});
