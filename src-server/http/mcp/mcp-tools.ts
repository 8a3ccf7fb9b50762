import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { atLeast } from '../../auth/access';
import { badRequest } from '../../contracts/errors';
import { registerApprovalCard } from './approval-card';
import type { McpRequestContext, McpServices } from './mcp-call';
import {
  AnswerQuestionInput,
  AnswerQuestionOutput,
  ApprovalsOutput,
  CancelOutput,
  CancelRunInput,
  DecideInput,
  DecideOutput,
  ListAgentsOutput,
  RunAgentInput,
  RunIdInput,
  RunResult,
  ThreadIdInput,
  ThreadRunsOutput,
} from './mcp-schemas';
import { editedPhase } from './elicitation-form';
import { RunFollower } from './run-follower';
import type { StopRef } from '../../services/approvals.service';
import { runResult, waitingOf } from './run-results';
import { toolAnswer } from './tool-answer';
import type { RequestTaskStore, TaskContext } from './task-store';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CreateTaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { z } from 'zod';

const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;

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
  const { agents: directory, runsService, threadsService, approvals, tenancy } = services;
  const { principal, baseUrl } = context;
  // The tools whose results name stops a person decides show them on the card where an MCP Apps host can.
  const showsCard = registerApprovalCard(server);

  server.registerTool(
    'list_agents',
    {
      title: 'List agents',
      description:
        'The agents and commands you can run, with their phases and the approval gates where a person decides, ' +
        'and the projects you may run them in.',
      outputSchema: ListAgentsOutput,
      annotations: READ_ONLY,
    },
    () =>
      toolAnswer(async () => {
        const projects = (await tenancy.list(principal, 'project'))
          .filter((project) => principal.instanceAdmin || atLeast(project.role, 'member'))
          .map(({ id, name }) => ({ id, name }));
        const visible = [
          ...(await directory.list(principal, 'agent')),
          ...(await directory.list(principal, 'command')),
        ].map((agent) => agent.entry.manifest);
        const agents = visible.map((manifest) => ({
          name: manifest.name,
          kind: manifest.kind,
          description: manifest.description,
          phases: manifest.phases.map((phase) => ({ id: phase.id, kind: phase.kind, label: phase.name })),
          gates: manifest.phases
            .filter((phase) => phase.kind === 'gate')
            .map((phase) => ({ id: phase.id, question: phase.approval_question ?? '' })),
        }));
        return { agents: projects.length ? agents : [], projects };
      }),
  );

  // The SDK checked the input against RunAgentInput; a task tool's handler is typed with it unknown.
  const runAgent = (args: unknown) => {
    const input = args as z.infer<typeof RunAgentInput>;
    return runsService.startRun(principal, input.agent, {
      message: input.message,
      project_id: input.project_id,
      thread_id: input.thread_id,
      multitask_strategy: input.multitask_strategy,
      model: input.model,
      project_path: input.project_path,
    });
  };
  server.experimental.tasks.registerToolTask(
    'run_agent',
    {
      title: 'Run an agent',
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

  server.registerTool(
    'get_run',
    {
      title: 'Read a run',
      description: "A run's status, its phases and their outputs, what it waits for, and the decisions taken in it.",
      inputSchema: RunIdInput,
      outputSchema: RunResult,
      annotations: READ_ONLY,
      _meta: showsCard,
    },
    ({ run_id }) => toolAnswer(async () => runResult(await runsService.runDetail(principal, run_id), baseUrl)),
  );

  server.registerTool(
    'list_thread_runs',
    {
      title: "List a thread's runs",
      description: 'The runs of a thread, most recent first.',
      inputSchema: ThreadIdInput,
      outputSchema: ThreadRunsOutput,
      annotations: READ_ONLY,
    },
    ({ thread_id }) =>
      toolAnswer(async () => ({
        runs: (await threadsService.runs(principal, thread_id)).map((run) => ({
          run_id: run.id,
          agent: run.agent,
          status: run.status,
          message: run.message,
          output: run.output,
          started_at: run.started_at,
          finished_at: run.finished_at,
        })),
      })),
  );

  server.registerTool(
    'list_approvals',
    {
      title: 'List approvals waiting for you',
      description:
        'The gates and tool calls that wait for your decision, oldest first, in every project where your role lets ' +
        'you decide them. Decide one with decide_approval.',
      outputSchema: ApprovalsOutput,
      annotations: READ_ONLY,
      _meta: showsCard,
    },
    () =>
      toolAnswer(async () => ({
        approvals: (await approvals.inbox(principal)).map((item) => {
          const { why_not_asked: _none, ...waiting } = waitingOf(
            {
              node: item.gate,
              question: item.question,
              required_context: item.required_context,
              context: item.context,
              decide_role: item.decide_role,
              expires_at: item.expires_at,
              ...(item.tool_call ? { tool_call: item.tool_call } : {}),
            },
            item.stop,
            item.thread_id,
            baseUrl,
          );
          const asked = item.tool_question;
          return {
            ...waiting,
            ...(asked ? { content: asked.message } : {}),
            run_id: item.run_id,
            thread_id: item.thread_id,
            agent: item.agent,
            project: item.project.name,
            message: item.message,
            waiting_since: item.waiting_since,
            approvals_needed: item.approvals.needed,
            approvals_given: item.approvals.given,
            ...(asked
              ? {
                  tool_question: {
                    server: asked.server,
                    tool: asked.tool,
                    mode: asked.mode,
                    requested_schema: asked.requested_schema,
                    url: asked.url,
                    url_host: asked.url_host,
                  },
                }
              : {}),
          };
        }),
      })),
  );

  server.experimental.tasks.registerToolTask(
    'decide_approval',
    {
      title: 'Decide an approval',
      description:
        'Approve, edit, respond to or reject a gate (name it with `gate`) or a tool call (name it with `call_id`) ' +
        'that a run of the thread waits at. The run resumes once it has its approvals. Called as a task, the task ' +
        'follows the run it resumes: input_required at its next stop, and its result the status the run ended with.',
      inputSchema: DecideInput,
      outputSchema: DecideOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask(args, extra) {
        const input = args as z.infer<typeof DecideInput>;
        if (!context.taskRequests.has(extra.requestId)) {
          return {
            task: tasks.inline(await toolAnswer(async () => decided(await decideApproval(services, context, input)))),
          };
        }
        return runAsTask('decide_approval', extra, async () => (await decideApproval(services, context, input)).run_id);
      },
      getTask: (_input, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: (_input, extra) => extra.taskStore.getTaskResult(extra.taskId) as Promise<CallToolResult>,
    },
  );

  server.registerTool(
    'answer_question',
    {
      title: "Answer a tool server's question",
      description:
        'Answers a question an MCP server asked in the middle of a tool call of a run (list_approvals shows it with ' +
        'kind `question`): accept with the fields it asks for, or once its page is done; decline; or cancel. The ' +
        'server then goes on with the call.',
      inputSchema: AnswerQuestionInput,
      outputSchema: AnswerQuestionOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    ({ stop_id, action, content }) =>
      toolAnswer(async () => ({ ...(await approvals.answerQuestion(principal, stop_id, { action, content })) })),
  );

  server.registerTool(
    'cancel_run',
    {
      title: 'Cancel a run',
      description: 'Cancels a running run or one that waits for approval; its model call in flight is stopped.',
      inputSchema: CancelRunInput,
      outputSchema: CancelOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ run_id, reason }) =>
      toolAnswer(async () => {
        const cancelled = await runsService.cancelRun(principal, run_id, reason ?? null);
        return { run_id: cancelled.run_id, thread_id: cancelled.thread_id, status: cancelled.status };
      }),
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

type Decided = Awaited<ReturnType<McpServices['approvals']['decide']>>;

function decided(accepted: Decided): z.infer<typeof DecideOutput> {
  return {
    run_id: accepted.run_id,
    thread_id: accepted.thread_id,
    status: accepted.status,
    ...(accepted.approvals
      ? { approvals_needed: accepted.approvals.needed, approvals_given: accepted.approvals.given }
      : {}),
  };
}

/** decide_approval: the decisions of the HTTP API's approve, reject and respond routes, through the one decide(). */
async function decideApproval(
  { approvals, threadsService, runsService }: McpServices,
  { principal }: McpRequestContext,
  input: z.infer<typeof DecideInput>,
): Promise<Decided> {
  const { thread_id: threadId, decision } = input;
  const reason = input.reason ?? null;
  if ((input.gate === undefined) === (input.call_id === undefined)) {
    throw badRequest('name either the gate or the call_id to decide');
  }
  if (decision === 'respond' && !input.text) throw badRequest('respond needs the answer in `text`');
  const round = input.round ?? null;
  const ref: StopRef =
    input.call_id !== undefined
      ? { thread: threadId, toolCall: input.call_id, round }
      : { thread: threadId, gate: input.gate!, round };
  if (decision === 'respond') return approvals.decide(principal, ref, { decision, reason, response: input.text! });
  if (decision === 'approve' || decision === 'reject') return approvals.decide(principal, ref, { decision, reason });
  if (input.call_id !== undefined) {
    if (!input.arguments) throw badRequest('an edit of a tool call needs `arguments`');
    return approvals.decide(principal, ref, { decision: 'approve', reason, arguments: input.arguments });
  }
  if (!input.text) throw badRequest('an edit needs the new text in `text`');
  // The text replaces the output of the phase an edit asked inside a call replaces (editedPhase).
  const waiting = (await threadsService.runs(principal, threadId)).find((run) => run.status === 'waiting_approval');
  const pending = waiting ? (await runsService.runDetail(principal, waiting.id)).pending_gate : null;
  const node = pending ? editedPhase(pending) : null;
  if (!node) throw badRequest(`gate "${input.gate}" shows no output to edit on thread ${threadId}`);
  return approvals.decide(principal, ref, { decision: 'approve', reason, edits: { [node]: input.text } });
}
