import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CreateTaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { z } from 'zod';
import { registerApprovalCard } from './approval-card';
import type { McpRequestContext, McpServices } from './mcp-call';
import { type DecideInput, RunAgentInput, RunResult } from './mcp-schemas';
import { RunFollower } from './run-follower';
import { DECIDE_APPROVAL, decideApproval, decided, RUN_AGENT_TITLE, sharedTools, startRun } from './common-tools';
import { toolAnswer } from './tool-answer';
import type { RequestTaskStore, TaskContext } from './task-store';

/**
 * The MCP server's tools (docs/mcp.md#tools): another door to the services the HTTP API uses, with the caller's own
 * rights, so that every check (roles, tenancy, per-user limits) is the same one.
 */
export function registerTools(
  server: McpServer,
  services: McpServices,
  context: McpRequestContext,
  tasks: RequestTaskStore,
): void {
  const { principal, baseUrl } = context;
  // The tools whose results name stops a person decides show them on the card where an MCP Apps host can.
  const showsCard = registerApprovalCard(server);

  for (const tool of sharedTools(services, { principal, baseUrl }, showsCard)) {
    server.registerTool(tool.name, tool.config, (input: unknown) => toolAnswer(() => tool.run(input as never)));
  }

  // The SDK checked the input against RunAgentInput; a task tool's handler is typed with it unknown.
  const runAgent = (args: unknown) => startRun(services, principal, args as z.infer<typeof RunAgentInput>);
  server.experimental.tasks.registerToolTask(
    'run_agent',
    {
      title: RUN_AGENT_TITLE,
      description:
        'Runs an agent or command with a message and answers its output when it ends. Where the run stops for a ' +
        'person (an approval gate, or a tool call that asks), you are asked inside this call if your client can ' +
        'answer questions and you may decide; otherwise the result says the run waits, with what to decide and the ' +
        "studio's link. Progress notifications say which phase runs. It may take minutes: set your client's request " +
        'timeout accordingly, or reset it on progress, or call it as a task (its status is input_required while it ' +
        'waits for a person).',
      inputSchema: RunAgentInput,
      outputSchema: RunResult,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      execution: { taskSupport: 'optional' },
      _meta: showsCard,
    },
    {
      async createTask(input, extra) {
        if (!context.taskRequests.has(extra.requestId)) {
          // Not called as a task: followed inside the call, as before tasks.
          const follower = new RunFollower(services, context, extra);
          return { task: tasks.inline(await toolAnswer(async () => follower.follow(await runAgent(input)))) };
        }
        return runAsTask('run_agent', extra, async () => (await runAgent(input)).runId);
      },
      getTask: (_input, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: (_input, extra) => extra.taskStore.getTaskResult(extra.taskId) as Promise<CallToolResult>,
    },
  );

  server.experimental.tasks.registerToolTask(
    'decide_approval',
    {
      title: DECIDE_APPROVAL.title,
      inputSchema: DECIDE_APPROVAL.inputSchema,
      outputSchema: DECIDE_APPROVAL.outputSchema,
      annotations: { ...DECIDE_APPROVAL.annotations },
      description:
        'Approve, edit, respond to or reject a gate (name it with `gate`) or a tool call (name it with `call_id`) ' +
        'that a run of the thread waits at. The run resumes once it has its approvals. Called as a task, the task ' +
        'follows the run it resumes: input_required at its next stop, and its result the status the run ended with.',
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask(args, extra) {
        const input = args as z.infer<typeof DecideInput>;
        if (!context.taskRequests.has(extra.requestId)) {
          return {
            task: tasks.inline(await toolAnswer(async () => decided(await decideApproval(services, principal, input)))),
          };
        }
        return runAsTask(
          'decide_approval',
          extra,
          async () => (await decideApproval(services, principal, input)).run_id,
        );
      },
      getTask: (_input, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: (_input, extra) => extra.taskStore.getTaskResult(extra.taskId) as Promise<CallToolResult>,
    },
  );
}

/**
 * A call made as a task (docs/mcp.md#runs-as-tasks): the task follows the run `start` begins or resumes. A call refused
 * before that (a viewer's, a run over the limit, a stop no longer pending) is a task that failed, with the HTTP API's
 * text: a task-augmented call answers a task, whatever becomes of it.
 */
async function runAsTask(tool: string, extra: CreateTaskRequestHandlerExtra, start: () => Promise<string>) {
  const started = await toolAnswer(async () => ({ run_id: await start() }));
  const made: TaskContext = started.isError
    ? { tool, run_id: null, error: (started.content[0] as { text: string }).text }
    : { tool, run_id: (started.structuredContent as { run_id: string }).run_id, error: null };
  return { task: await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl, context: made }) };
}
