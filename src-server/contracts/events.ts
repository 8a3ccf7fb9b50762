import { z } from 'zod';
import { ToolQuestionModeSchema } from './tool-questions';
import { RoutingRuleSchema, RuleSourceSchema } from './assets';
import { GateDecisionKindSchema, NodeStatusSchema, PendingGateSchema } from './runs';
import { PolicySourceSchema, ToolReplaySchema } from './tools';

/** On a gate's decision in a comparison (docs/compare.md): it is the decision the run compared took there. */
const IN_ORIGINAL = z
  .object({ run_id: z.uuid(), edited: z.boolean() })
  .optional()
  .meta({
    description:
      'a comparison took the decision the run it compares took at this gate (`run_id`); `edited`: that run approved ' +
      "with an edit there, which the comparison does not apply (its own text goes on); absent for a person's decision",
  });

/**
 * Every event a run stream carries: the server emits exactly these and the studio consumes them.
 * On the wire each is `event: <type>`, `id: <per-run sequence>`, `data: <this object as JSON>`.
 * A new run's stream starts with run_start; a stream resumed by a gate decision starts with
 * gate_approved or gate_rejected and keeps the run's sequence numbers; a run taken over by another
 * process goes on with run_resumed, under ids above every one its clients may have seen.
 */
/** Who took a decision, by name, the same list on every decision event (events stored before 1.2.0 lack it). */
const DECIDERS = z
  .array(z.string())
  .optional()
  .meta({ description: 'who decided, by name: the approvers whose approvals resumed the run, or the one who decided' });
/** The name `by` had before `deciders`: a list on approvals, a string on rejections and responses. */
const DEPRECATED_BY = {
  deprecated: true,
  description: 'deprecated since API 1.2.0, to be removed in 2.0.0: read `deciders`',
};

const RUN_EVENTS = [
  /**
   * The run waits in its thread's queue (multitask_strategy `enqueue`): it starts, with `run_start`, when the runs
   * ahead of it have ended. `position` 1 is next.
   */
  z.object({
    type: z.literal('run_queued'),
    run_id: z.uuid(),
    thread_id: z.uuid(),
    position: z.number().int().min(1),
  }),
  z.object({
    type: z.literal('run_start'),
    run_id: z.uuid(),
    thread_id: z.uuid(),
    agent: z.string(),
    /** The version of the agent the run runs; absent in the events of runs from before agents had versions. */
    agent_version: z.string().optional(),
    model: z.string(),
  }),
  z.object({
    /**
     * The process executing the run stopped, and another (or the same one, restarted) continues it from its
     * last checkpoint. `node` is the phase that was cut off: it runs again, and its partial output is replaced.
     */
    type: z.literal('run_resumed'),
    run_id: z.uuid(),
    attempt: z.number().int(),
    node: z.string().nullable(),
  }),
  z.object({ type: z.literal('node_enter'), node: z.string() }),
  z.object({ type: z.literal('token'), node: z.string(), text: z.string() }),
  z.object({
    type: z.literal('node_exit'),
    node: z.string(),
    status: NodeStatusSchema,
    /** A model phase's figures, as stored with its node row (RunNode); absent on other nodes. */
    queue_wait_ms: z.number().nullable().optional(),
    prompt_tokens: z.number().int().nullable().optional(),
    output_tokens: z.number().int().nullable().optional(),
  }),
  /** A thinking model's reasoning, streamed apart from the answer's tokens; never part of the phase's output. */
  z.object({ type: z.literal('thinking'), node: z.string(), text: z.string() }),
  /**
   * The local runtime is loading the model before it can answer (a cold start): the first token ends the wait.
   * `expected_s` is how long the last load of this model took, when one was seen.
   */
  z.object({
    type: z.literal('model_loading'),
    node: z.string(),
    model: z.string(),
    expected_s: z.number().nullable(),
  }),
  /**
   * The phase's model call failed for a passing reason (a 429 or 5xx from the provider, a connection reset or refused)
   * before it streamed anything, and is tried again after `wait_s`: the `retry`-th of at most `retries`
   * (docs/run-lifecycle.md#retries-of-model-calls). A failure after tokens streamed is never tried again.
   */
  z.object({
    type: z.literal('model_retry'),
    node: z.string(),
    retry: z.number().int().min(1),
    retries: z.number().int().min(1),
    wait_s: z.number(),
    reason: z.string(),
  }),
  /** Stored with the node row as well: `prompt_cut` (the runtime cut the prompt), `answer_cut` (stopped at length). */
  z.object({ type: z.literal('node_warning'), node: z.string(), code: z.string(), message: z.string() }),
  z.object({
    type: z.literal('queue'),
    node: z.string(),
    /** 1 = next in line. */
    position: z.number().int(),
    waiting: z.number().int(),
    active: z.number().int(),
    estimated_wait_s: z.number(),
  }),
  /**
   * The run waits for the server, not for the model: this process executes as many runs as it takes at once
   * (RUN_MAX_ACTIVE), and the run is `position` in line for a place (1 = next). It starts by itself.
   */
  z.object({
    type: z.literal('server_queue'),
    position: z.number().int(),
    /** Runs this process executes now. */
    running: z.number().int(),
  }),
  /**
   * A budget the run counts against reached its warning level (docs/operations.md#budgets): said once per budget and
   * period, on the stream of the run whose model call first saw it. `message` names the budget and its spend.
   */
  z.object({ type: z.literal('budget_warning'), budget_id: z.uuid(), message: z.string() }),
  z.object({
    type: z.literal('context_trimmed'),
    node: z.string(),
    dropped_messages: z.number().int(),
    estimated_tokens_before: z.number().int(),
    estimated_tokens_after: z.number().int(),
    budget: z.number().int(),
    /** The parts of the newest message that were shortened, e.g. `output:analysis`, `project_context`. */
    trimmed_parts: z.array(z.string()).optional(),
  }),
  /** `source`: where the rule came from (absent in events recorded before it was sent). */
  z.object({
    type: z.literal('route_matched'),
    from: z.string(),
    to: z.string(),
    rule: RoutingRuleSchema,
    source: RuleSourceSchema.optional(),
  }),
  z.object({ type: z.literal('gate_waiting'), ...PendingGateSchema.shape }),
  /** `deciders`: the people whose approvals resumed the run (several when the gate needs several). */
  z.object({
    type: z.literal('gate_approved'),
    node: z.string(),
    reason: z.string().nullable(),
    deciders: DECIDERS,
    in_original: IN_ORIGINAL,
    by: z.array(z.string()).optional().meta(DEPRECATED_BY),
  }),
  /** Approved with the gated content changed: `edits` replaced those phases' outputs, and the run goes on. */
  z.object({
    type: z.literal('gate_edited'),
    node: z.string(),
    reason: z.string().nullable(),
    edits: z.record(z.string(), z.string()),
    deciders: DECIDERS,
    by: z.array(z.string()).optional().meta(DEPRECATED_BY),
  }),
  /** Sent back: phase `to` runs again with `response` as feedback, and the gate is reached again. */
  z.object({
    type: z.literal('gate_responded'),
    node: z.string(),
    to: z.string(),
    response: z.string(),
    reason: z.string().nullable(),
    deciders: DECIDERS,
    in_original: IN_ORIGINAL,
    by: z.string().optional().meta(DEPRECATED_BY),
  }),
  z.object({
    type: z.literal('gate_rejected'),
    node: z.string(),
    reason: z.string().nullable(),
    deciders: DECIDERS,
    in_original: IN_ORIGINAL,
    by: z.string().optional().meta(DEPRECATED_BY),
  }),
  /** Nobody decided in time: the gate's expiry approved, rejected, or continued at phase `to`. */
  z.object({
    type: z.literal('gate_expired'),
    node: z.string(),
    outcome: z.enum(['approve', 'reject', 'route']),
    to: z.string().nullable(),
    in_original: IN_ORIGINAL,
  }),
  /**
   * A phase's model called a tool. `policy`: `allow` (it runs), `ask` (a person decides first), `granted` (allowed for
   * the rest of the thread), `covered` (a gate's approval of exactly this text covers it), or `deny` (not offered: the
   * model is told so).
   */
  z.object({
    type: z.literal('tool_call'),
    node: z.string(),
    call_id: z.string(),
    tool: z.string(),
    server: z.string(),
    arguments: z.record(z.string(), z.unknown()),
    arguments_sha256: z.string(),
    policy: z.enum(['allow', 'ask', 'granted', 'covered', 'deny']),
    policy_source: PolicySourceSchema.optional().meta({
      description:
        "where the tool's policy came from (the agent's, its organisation's floor, the default); absent for a call " +
        'not offered to the phase',
    }),
    publish: z
      .object({ from: z.string(), content: z.string() })
      .optional()
      .meta({
        description:
          "a publish step's call: it writes the text of phase `from` as a gate approved it, in argument `content`; " +
          'absent for a call the model made',
      }),
    replay: ToolReplaySchema.optional(),
  }),
  /** The run waits for a person to decide a tool call (`tool_call`); the stream then ends, as at a gate. */
  z.object({ type: z.literal('tool_waiting'), ...PendingGateSchema.shape }),
  /** A tool call was decided; `arguments_sha256` is what runs (an edit's hash when the arguments were edited). */
  z.object({
    type: z.literal('tool_decided'),
    node: z.string(),
    call_id: z.string(),
    decision: GateDecisionKindSchema,
    outcome: z.enum(['approve', 'reject', 'route']).optional(),
    reason: z.string().nullable(),
    deciders: z.array(z.string()),
    arguments_sha256: z.string().optional(),
  }),
  /**
   * An MCP server asks a person something in the middle of call `call_id` (elicitation): a stop of kind `question`
   * whose id is this event's (`<run id>:<event id>`), answered at POST /stops/{id}/answer. The run goes on running:
   * the call waits, and the stream with it.
   */
  z.object({
    type: z.literal('tool_question'),
    node: z.string(),
    call_id: z.string(),
    tool: z.string(),
    server: z.string(),
    mode: ToolQuestionModeSchema,
    message: z.string(),
    requested_schema: z.record(z.string(), z.unknown()).nullable(),
    url_host: z.string().nullable(),
    expires_at: z.string(),
  }),
  /**
   * The question was answered (`accept`, `decline`, `cancel`), nobody did in time (`expired`), or the server stopped
   * asking before anyone did (`withdrawn`).
   */
  z.object({
    type: z.literal('tool_question_answered'),
    node: z.string(),
    call_id: z.string(),
    stop_id: z.string(),
    action: z.enum(['accept', 'decline', 'cancel', 'expired', 'withdrawn']),
    by: z.string().nullable().meta({ description: 'who answered; null when nobody did' }),
  }),
  /** A tool's answer, as the model reads it: untrusted text, never HTML. */
  z.object({
    type: z.literal('tool_result'),
    node: z.string(),
    call_id: z.string(),
    tool: z.string(),
    is_error: z.boolean(),
    text: z.string(),
  }),
  z.object({ type: z.literal('run_rejected'), run_id: z.uuid(), reason: z.string().nullable() }),
  z.object({ type: z.literal('run_done'), run_id: z.uuid(), output: z.string() }),
  z.object({ type: z.literal('run_error'), run_id: z.uuid(), error_detail: z.string() }),
  z.object({ type: z.literal('run_cancelled'), run_id: z.uuid(), reason: z.string().nullable() }),
] as const;

/** `run_start` → `RunStartEvent`: each member's name as a component of the OpenAPI document. */
const componentName = (type: string) => `${type.replace(/(^|_)(\w)/g, (_, __, c: string) => c.toUpperCase())}Event`;

/**
 * The union is the `RunEvent` component of the OpenAPI document and each member its own (`RunStartEvent`, …), so
 * generated clients get one discriminated type instead of a copy per operation. Naming a schema (`.meta`) makes a copy
 * of the same type: the members are named here, so an event added above is named too.
 */
export const RunEventSchema = z
  .discriminatedUnion(
    'type',
    RUN_EVENTS.map((event) =>
      event.meta({ id: componentName(event.shape.type.value) }),
    ) as unknown as typeof RUN_EVENTS,
  )
  .meta({
    id: 'RunEvent',
    description:
      'One event of a run stream. On the wire: `event: <type>`, `id: <the run sequence number>`, `data: <this JSON>`.',
  });
export type RunEvent = z.infer<typeof RunEventSchema>;

export type RunEventType = RunEvent['type'];
export type RunEventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;

/** Events after which a stream ends: the run finished, or it stopped at a gate. */
/** The events that carry a gate's decision, one per kind of decision (engine/decision-events.ts). */
export const GATE_DECISION_EVENTS = [
  'gate_approved',
  'gate_edited',
  'gate_responded',
  'gate_rejected',
  'gate_expired',
] as const satisfies readonly RunEventType[];
export type GateDecisionEvent = RunEventOf<(typeof GATE_DECISION_EVENTS)[number]>;

export const TERMINAL_EVENTS: readonly RunEventType[] = [
  'run_done',
  'run_error',
  'run_cancelled',
  'run_rejected',
  'gate_waiting',
  'tool_waiting',
];

/**
 * One event on the wire: `event:` is the type, `id:` the run's sequence, `data:` the event's JSON text, made once
 * per event however many clients follow the run, and stored as it was sent.
 */
export function formatSseFrame(id: number, type: RunEventType, data: string): string {
  return `event: ${type}\nid: ${id}\ndata: ${data}\n\n`;
}

/**
 * The reconnection delay every stream announces first (`retry:`), in milliseconds: a client whose connection was
 * cut comes back after it with `Last-Event-ID` and misses nothing. Long enough that clients coming back together
 * after a restart do not crowd a server that is still starting; short enough that a cut is barely noticed.
 */
export const SSE_RETRY_MS = 3000;
