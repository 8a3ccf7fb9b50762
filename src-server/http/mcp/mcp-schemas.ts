import { StopKindSchema } from '../../contracts/stops';
import { z } from 'zod';
import { MultitaskStrategySchema } from '../../contracts/runs';

/**
 * The inputs and structured results of the MCP server's tools (docs/mcp.md#tools). Smaller than the HTTP API's
 * schemas: what an assistant needs to act on, in plain fields, with no references between schemas.
 */

const uuid = z.uuid();

export const ListAgentsOutput = z.object({
  agents: z.array(
    z.object({
      name: z.string(),
      kind: z.enum(['agent', 'command']),
      description: z.string(),
      phases: z.array(z.object({ id: z.string(), kind: z.string(), label: z.string() })),
      gates: z.array(z.object({ id: z.string(), question: z.string() })),
    }),
  ),
  projects: z
    .array(z.object({ id: uuid, name: z.string() }))
    .describe('the projects the caller may run them in (member role or higher)'),
});

export const RunAgentInput = z.object({
  agent: z.string().min(1).max(200).describe('the name of an agent or command, as list_agents gives it'),
  message: z.string().min(1).max(100_000).describe('what to ask it'),
  project_id: uuid.optional().describe('the project to run in (a new thread); your default project when left out'),
  thread_id: uuid.optional().describe('continue this thread instead of starting a new one'),
  multitask_strategy: MultitaskStrategySchema.optional().describe(
    'when the thread has a run going: reject (the default: an error), enqueue (runs after it), interrupt (cancels ' +
      'it and runs this now) or rollback (removes it and runs this instead)',
  ),
  model: z.string().max(200).optional().describe('a model such as ollama:llama3.2 or gemini:gemini-2.5-flash'),
  project_path: z.string().max(4000).optional().describe('the folder or git URL the agent reads'),
});

const PhaseResult = z.object({ id: z.string(), status: z.string(), output: z.string() });

/** What waits for a person: a gate, or a tool call whose policy asks. */
const Waiting = z.object({
  kind: StopKindSchema,
  stop_id: z.string().describe('the stop: `<run id>:<wait seq>`, new each time the run stops'),
  round: z.number().int().describe("the stop's round: name it in decide_approval; one more after each approver's edit"),
  gate: z.string().describe('the gate, or the phase that made the tool call'),
  call_id: z.string().optional().describe('the tool call, for decide_approval'),
  tool: z.string().optional(),
  arguments: z.record(z.string(), z.unknown()).optional(),
  input_schema: z.record(z.string(), z.unknown()).optional().describe("the tool's input schema, for an edit"),
  question: z.string(),
  content: z.string().describe('what the person approves: the phase outputs the gate shows'),
  decide_role: z.string(),
  expires_at: z.string().nullable().describe('when nobody deciding ends the wait (its expiry acts); null: never'),
  why_not_asked: z
    .string()
    .optional()
    .describe('why the question was not answered inside this call; decide it with decide_approval or in the studio'),
  studio_url: z.string(),
});

export const RunResult = z.object({
  run_id: uuid,
  thread_id: uuid,
  agent: z.string(),
  status: z.string().describe('completed, failed, cancelled, rejected, running or waiting_approval'),
  output: z.string().nullable(),
  error_detail: z.string().nullable(),
  phases: z.array(PhaseResult),
  waiting: Waiting.nullable().describe('set while the run waits for a person'),
  decisions: z.array(
    z.object({
      gate: z.string(),
      decision: z.string(),
      by: z.string(),
      reason: z.string().nullable(),
      tool_call_id: z.string().nullable(),
      at: z.string(),
    }),
  ),
  questions: z
    .array(
      z.object({
        stop_id: z.string(),
        tool: z.string(),
        server: z.string(),
        mode: z.string(),
        message: z.string(),
        requested_schema: z.record(z.string(), z.unknown()).nullable(),
        url_host: z.string().nullable(),
        expires_at: z.string(),
      }),
    )
    .describe("the questions the run's tool servers wait on a person for; answer one with answer_question"),
  studio_url: z.string(),
});
export type RunResult = z.infer<typeof RunResult>;

export const RunIdInput = z.object({ run_id: uuid });
export const CancelRunInput = RunIdInput.extend({ reason: z.string().max(2000).optional() });
export const ThreadIdInput = z.object({ thread_id: uuid });

export const ThreadRunsOutput = z.object({
  runs: z.array(
    z.object({
      run_id: uuid,
      agent: z.string(),
      status: z.string(),
      message: z.string().nullable(),
      output: z.string().nullable(),
      started_at: z.string(),
      finished_at: z.string().nullable(),
    }),
  ),
});

export const ApprovalsOutput = z.object({
  approvals: z.array(
    Waiting.omit({ why_not_asked: true }).extend({
      run_id: uuid,
      thread_id: uuid,
      agent: z.string(),
      project: z.string(),
      message: z.string().nullable(),
      waiting_since: z.string(),
      approvals_needed: z.number().int(),
      approvals_given: z.number().int(),
      tool_question: z
        .object({
          server: z.string(),
          tool: z.string(),
          mode: z.enum(['form', 'url']),
          requested_schema: z.record(z.string(), z.unknown()).nullable(),
          url: z.string().nullable(),
          url_host: z.string().nullable(),
        })
        .optional()
        .describe("set when the stop is a tool server's question (kind `question`): answer it with answer_question"),
    }),
  ),
});

export const AnswerQuestionInput = z.object({
  stop_id: z.string().max(100).describe("the question's stop, as list_approvals gives it"),
  action: z
    .enum(['accept', 'decline', 'cancel'])
    .describe('accept (with `content` for a form; as is for a page once it is done), decline, or cancel'),
  content: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]))
    .optional()
    .describe("accept of a form: the fields, as the question's schema names and types them"),
});

export const AnswerQuestionOutput = z.object({ stop_id: z.string(), run_id: uuid, action: z.string() });

export const DecisionKind = z.enum(['approve', 'edit', 'respond', 'reject']);
export type DecisionKind = z.infer<typeof DecisionKind>;

export const DecideInput = z.object({
  thread_id: uuid,
  gate: z.string().max(100).optional().describe('the gate to decide (as list_approvals gives it)'),
  call_id: z.string().max(200).optional().describe('or the tool call to decide'),
  decision: DecisionKind.describe(
    'approve; edit (approve with `text` replacing the gated output, or with `arguments` for a tool call); ' +
      "respond (send `text` back: to the phase before a gate, or as the tool's answer); reject",
  ),
  round: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "the stop's round you read (`stop.round` in get_run or list_approvals): after another approver's edit an earlier round is refused; without it, only a stop's first round is decided",
    ),
  reason: z.string().max(2000).optional(),
  text: z.string().max(100_000).optional().describe('edit: the new text; respond: the answer'),
  arguments: z.record(z.string(), z.unknown()).optional().describe('edit of a tool call: its new arguments'),
});

export const DecideOutput = z.object({
  run_id: uuid,
  thread_id: uuid,
  status: z.string().describe('running: the run resumed; waiting_approval: it needs more approvals'),
  approvals_needed: z.number().int().optional(),
  approvals_given: z.number().int().optional(),
});

export const CancelOutput = z.object({ run_id: uuid, thread_id: uuid, status: z.string() });
