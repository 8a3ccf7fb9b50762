import { randomBytes } from 'node:crypto';
import type {
  CreateTaskOptions,
  QueuedMessage,
  TaskMessageQueue,
  TaskStore,
} from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CallToolResult, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage } from '../../contracts/errors';
import type { McpTask } from '../../storage/mcp-sessions';
import { getLogger } from '../../log';
import type { McpRequestContext, McpServices } from './mcp-call';
import { askAtStop } from './questions';
import { runResult } from './run-results';
import { toolAnswer } from './tool-answer';

const log = getLogger('svc.api');

/** How long a task is kept when its client names no time: a run may wait days for its approver. */
export const DEFAULT_TASK_TTL_MS = 7 * 24 * 3600 * 1000;
/** The longest a task is kept, whatever its client asks (a client asking for no limit gets this). */
export const MAX_TASK_TTL_MS = 30 * 24 * 3600 * 1000;
/** How often a client is told to poll `tasks/get`, and how often a waiting `tasks/result` looks at the run. */
export const TASK_POLL_INTERVAL_MS = 1000;
/** The protocol's key for the task a message belongs to. */
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/** What a tool's `createTask` passes to the store: the run the task follows, or why none began. */
export type TaskContext = { tool: string } & ({ run_id: string; error: null } | { run_id: null; error: string });

const asTask = (task: McpTask): Task => ({
  taskId: task.id,
  status: task.status,
  ...(task.status_message ? { statusMessage: task.status_message } : {}),
  ttl: task.ttl_ms,
  pollInterval: task.poll_interval_ms,
  createdAt: task.created_at,
  lastUpdatedAt: task.last_updated_at,
});

/**
 * The protocol's tasks (2025-11-25) as one request to /mcp sees them (docs/mcp.md#runs-as-tasks). A task is a row
 * naming its run and its person; its status and its result are read from the run, so any process answers, in any of
 * her sessions, after restarts, and a decision taken anywhere (the studio, Slack, mail) moves it on. Another person's
 * task reads as one that does not exist. The message queue is how a waiting `tasks/result` asks the caller at the
 * run's stop, when she may decide it: the question goes out on that response's stream, and her answer is taken on
 * whichever process it reaches, as inside a call.
 *
 * A `run_agent` call without a task is followed inside the call as before; the SDK then reads its result from the
 * store as if it were a task's, so the store holds that one result for the request (`inline`).
 */
export class RequestTaskStore implements TaskStore, TaskMessageQueue {
  private readonly inlineResults = new Map<string, { task: Task; result: CallToolResult }>();
  /** The stops (id and round) this request asked about, each once, and the question still open. */
  private readonly askedAt = new Set<string>();
  private open: { id: string; deadline: number } | undefined;

  constructor(
    private readonly services: McpServices,
    private readonly context: McpRequestContext,
  ) {}

  /** A finished task that holds a call's result for this request only: the call was not made as a task. */
  inline(result: CallToolResult): Task {
    const taskId = `inline-${randomBytes(12).toString('base64url')}`;
    const now = new Date().toISOString();
    const task: Task = { taskId, status: 'completed', ttl: 0, createdAt: now, lastUpdatedAt: now };
    this.inlineResults.set(taskId, { task, result });
    return task;
  }

  async createTask(params: CreateTaskOptions): Promise<Task> {
    const { run_id, error, tool } = params.context as unknown as TaskContext;
    const ttl = Math.min(params.ttl ?? DEFAULT_TASK_TTL_MS, MAX_TASK_TTL_MS);
    const id = randomBytes(18).toString('base64url');
    const userId = this.context.principal.id;
    await this.services.sessions.createTask({
      id,
      user_id: userId,
      run_id,
      error,
      tool,
      ttl_ms: Math.max(ttl, TASK_POLL_INTERVAL_MS),
      poll_interval_ms: TASK_POLL_INTERVAL_MS,
    });
    log.info(`task ${id} of ${this.context.principal.name} ${run_id ? `follows run=${run_id}` : `failed: ${error}`}`);
    return asTask((await this.services.sessions.task(id, userId))!);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const inline = this.inlineResults.get(taskId);
    if (inline) return inline.task;
    const task = await this.services.sessions.task(taskId, this.context.principal.id);
    return task ? asTask(task) : null;
  }

  /**
   * The call's result once its run has ended, in the tool's own shape: run_agent's is the run as it ended (as without
   * a task); decide_approval's, the run it resumed with its last status.
   */
  async getTaskResult(taskId: string): Promise<Result> {
    const inline = this.inlineResults.get(taskId);
    if (inline) return inline.result;
    const task = await this.services.sessions.task(taskId, this.context.principal.id);
    if (!task) throw new Error(`Task not found: ${taskId}`);
    if (!task.run_id) return { isError: true, content: [{ type: 'text', text: task.error ?? 'the call failed' }] };
    const runId = task.run_id;
    const { runsService } = this.services;
    const { principal, baseUrl } = this.context;
    return toolAnswer(async () => {
      const run = await runsService.runDetail(principal, runId);
      // Each tool's result keeps its output schema: a decision's is where the run it resumed ended.
      if (task.tool === 'decide_approval') return { run_id: run.id, thread_id: run.thread_id, status: run.status };
      return runResult(run, baseUrl);
    });
  }

  /** Results are the run's own: nothing stores one. */
  storeTaskResult(): Promise<void> {
    return Promise.reject(new Error("a task's result is read from its run"));
  }

  /** `tasks/cancel` cancels the run, with the rights a cancel of it needs; other changes come from the run. */
  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    if (status !== 'cancelled') return;
    const task = await this.services.sessions.task(taskId, this.context.principal.id);
    if (!task?.run_id) throw new Error(`Task not found: ${taskId}`);
    await this.services.runsService.cancelRun(this.context.principal, task.run_id, statusMessage ?? null);
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const page = await this.services.sessions.tasks(this.context.principal.id, cursor);
    const tasks = page.tasks.map(asTask);
    return { tasks, ...(page.more ? { nextCursor: tasks.at(-1)!.taskId } : {}) };
  }

  // The message queue: what a waiting `tasks/result` sends on its stream.

  enqueue(): Promise<void> {
    return Promise.reject(new Error('messages of a task are asked from its run, not queued'));
  }

  /**
   * The next message for the caller waiting on `tasks/result`: the question at the run's stop when she may decide it
   * and was not asked about that stop in this request yet; the question taken back when nobody answered in time.
   */
  async dequeue(taskId: string): Promise<QueuedMessage | undefined> {
    if (this.open) return this.overdue();
    const found = await this.services.sessions.task(taskId, this.context.principal.id);
    if (found?.status !== 'input_required' || !found.run_id) return undefined;
    const run = await this.services.runsService.runDetail(this.context.principal, found.run_id);
    if (run.status !== 'waiting_approval' || !run.pending_gate || !run.stop) return undefined;
    const stop = `${run.stop.id}:${run.stop.round}`;
    if (this.askedAt.has(stop)) return undefined;
    this.askedAt.add(stop);
    const asked = await askAtStop(this.services, this.context, run, { [RELATED_TASK]: { taskId } });
    if (typeof asked === 'string') return undefined;
    this.open = { id: asked.id, deadline: Date.now() + this.services.elicitationTimeoutS * 1000 };
    return { type: 'request', message: asked.request, timestamp: Date.now() };
  }

  /** The open question taken back when its time is up; nothing while it waits; forgotten once answered. */
  private async overdue(): Promise<QueuedMessage | undefined> {
    const { id, deadline } = this.open!;
    const state = await this.services.sessions.state(id);
    if (state?.state !== 'asked' && state?.state !== 'answering') {
      this.open = undefined;
      return undefined;
    }
    if (Date.now() < deadline || !(await this.services.sessions.expire(id))) return undefined;
    this.open = undefined;
    return {
      type: 'notification',
      message: {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: id, reason: 'nobody answered in time' },
      },
      timestamp: Date.now(),
    };
  }

  dequeueAll(): Promise<QueuedMessage[]> {
    return Promise.resolve([]);
  }

  /** The request ended (its client went away): a question still open is taken back. */
  async close(): Promise<void> {
    if (!this.open) return;
    await this.services.sessions.expire(this.open.id).catch((error) => {
      log.warn(`taking back question ${this.open?.id} failed: ${errorMessage(error)}`);
    });
    this.open = undefined;
  }
}
