import type { z } from 'zod';
import { atLeast } from '../../auth/access';
import type { Principal } from '../../auth/principal';
import { badRequest } from '../../contracts/errors';
import type { StopRef } from '../../services/approvals.service';
import { editedPhase } from './elicitation-form';
import type { McpServices } from './mcp-call';
import {
  AnswerQuestionInput,
  AnswerQuestionOutput,
  ApprovalsOutput,
  CancelOutput,
  CancelRunInput,
  DecideInput,
  DecideOutput,
  ListAgentsOutput,
  type RunAgentInput,
  RunIdInput,
  RunResult,
  ThreadIdInput,
  ThreadRunsOutput,
} from './mcp-schemas';
import { runResult, waitingOf } from './run-results';

const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;

/** Who calls a tool, and the server's address as the client reached it (for the studio links in results). */
export interface ToolCaller {
  principal: Principal;
  baseUrl: string;
}

/** A tool both protocol eras serve the same way: its declaration, and what it does with checked input. */
export interface SharedTool {
  name: string;
  config: {
    title: string;
    description: string;
    inputSchema?: z.ZodObject;
    outputSchema: z.ZodObject;
    annotations: Record<string, boolean>;
    _meta?: Record<string, unknown>;
  };
  /** The structured result; a ServiceError is the tool's error text (toolAnswer). */
  run(input: never): Promise<Record<string, unknown>>;
}

/** The declaration and description of run_agent, which each era serves its own way (a task, or input_required). */
export const RUN_AGENT_TITLE = 'Run an agent';

/** run_agent's run: started as the HTTP API's POST /runs starts one, with the caller's rights. */
export function startRun(services: McpServices, principal: Principal, input: z.infer<typeof RunAgentInput>) {
  return services.runsService.startRun(principal, input.agent, {
    message: input.message,
    project_id: input.project_id,
    thread_id: input.thread_id,
    multitask_strategy: input.multitask_strategy,
    model: input.model,
    project_path: input.project_path,
  });
}

/**
 * The tools that read and decide (docs/mcp.md#tools), the same for a 2025 session and a 2026-07-28 request: another
 * door to the services the HTTP API uses, with the caller's own rights, so that every check (roles, tenancy,
 * per-user limits) is the same one. `card`: the `_meta` naming the approval card, for the tools that show stops.
 */
export function sharedTools(services: McpServices, caller: ToolCaller, card: Record<string, unknown>): SharedTool[] {
  const { agents: directory, runsService, threadsService, approvals, tenancy } = services;
  const { principal, baseUrl } = caller;
  const tool = <I extends z.ZodObject | undefined>(
    name: string,
    config: SharedTool['config'] & { inputSchema?: I },
    run: (input: I extends z.ZodObject ? z.infer<I> : Record<string, never>) => Promise<Record<string, unknown>>,
  ): SharedTool => ({ name, config, run: run as SharedTool['run'] });

  return [
    tool(
      'list_agents',
      {
        title: 'List agents',
        description:
          'The agents and commands you can run, with their phases and the approval gates where a person decides, ' +
          'and the projects you may run them in.',
        outputSchema: ListAgentsOutput,
        annotations: READ_ONLY,
      },
      async () => {
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
      },
    ),
    tool(
      'get_run',
      {
        title: 'Read a run',
        description: "A run's status, its phases and their outputs, what it waits for, and the decisions taken in it.",
        inputSchema: RunIdInput,
        outputSchema: RunResult,
        annotations: READ_ONLY,
        _meta: card,
      },
      async ({ run_id }) => runResult(await runsService.runDetail(principal, run_id), baseUrl),
    ),
    tool(
      'list_thread_runs',
      {
        title: "List a thread's runs",
        description: 'The runs of a thread, most recent first.',
        inputSchema: ThreadIdInput,
        outputSchema: ThreadRunsOutput,
        annotations: READ_ONLY,
      },
      async ({ thread_id }) => ({
        runs: (await threadsService.runs(principal, thread_id)).map((run) => ({
          run_id: run.id,
          agent: run.agent,
          status: run.status,
          message: run.message,
          output: run.output,
          started_at: run.started_at,
          finished_at: run.finished_at,
        })),
      }),
    ),
    tool(
      'list_approvals',
      {
        title: 'List approvals waiting for you',
        description:
          'The gates and tool calls that wait for your decision, oldest first, in every project where your role ' +
          'lets you decide them. Decide one with decide_approval.',
        outputSchema: ApprovalsOutput,
        annotations: READ_ONLY,
        _meta: card,
      },
      async () => ({
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
      }),
    ),
    tool(
      'answer_question',
      {
        title: "Answer a tool server's question",
        description:
          'Answers a question an MCP server asked in the middle of a tool call of a run (list_approvals shows it ' +
          'with kind `question`): accept with the fields it asks for, or once its page is done; decline; or cancel. ' +
          'The server then goes on with the call.',
        inputSchema: AnswerQuestionInput,
        outputSchema: AnswerQuestionOutput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      },
      async ({ stop_id, action, content }) => ({
        ...(await approvals.answerQuestion(principal, stop_id, { action, content })),
      }),
    ),
    tool(
      'cancel_run',
      {
        title: 'Cancel a run',
        description: 'Cancels a running run or one that waits for approval; its model call in flight is stopped.',
        inputSchema: CancelRunInput,
        outputSchema: CancelOutput,
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      },
      async ({ run_id, reason }) => {
        const cancelled = await runsService.cancelRun(principal, run_id, reason ?? null);
        return { run_id: cancelled.run_id, thread_id: cancelled.thread_id, status: cancelled.status };
      },
    ),
  ];
}

/** decide_approval's declaration; each era adds how it runs (a task in 2025-11-25, a plain call in 2026-07-28). */
export const DECIDE_APPROVAL = {
  title: 'Decide an approval',
  inputSchema: DecideInput,
  outputSchema: DecideOutput,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
} as const;

type Decided = Awaited<ReturnType<McpServices['approvals']['decide']>>;

export function decided(accepted: Decided): z.infer<typeof DecideOutput> {
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
export async function decideApproval(
  { approvals, threadsService, runsService }: McpServices,
  principal: Principal,
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
