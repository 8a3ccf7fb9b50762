import { z } from 'zod';
import { DecisionViaSchema, StopNoticeSchema } from './slack';
import { UuidSchema } from './common';
import { EdgeSchema, NodeIdSchema, PhaseSchema, RoutingRuleSchema, RuleSourceSchema, AssetKindSchema } from './assets';
import { GateExpirySchema } from './gate-policy';
import { PendingToolCallSchema, PolicySourceSchema } from './tools';
import { ReasonBodySchema } from './common';
import { RoleSchema } from './tenancy';
import { RunUsageSchema } from './usage';
import { RoundSchema, StopSchema } from './stops';
import { OpenToolQuestionSchema, ToolQuestionSchema } from './tool-questions';

/** Run status values (docs/run-lifecycle.md#run-statuses). */
export const RunStatusSchema = z.enum([
  'queued',
  'running',
  'waiting_approval',
  'completed',
  'rejected',
  'error',
  'cancelled',
]);
export type RunStatus = z.infer<typeof RunStatusSchema>;
export const FINISHED_RUN_STATUSES: readonly RunStatus[] = ['completed', 'rejected', 'error', 'cancelled'];

/** The output of a run a rejected gate ended: the terminal node's, the run's `output`. */
export const REJECTED_RUN_OUTPUT = 'Stopped: the approval gate was rejected.';

/**
 * What a run request does when its thread is busy (a run running, waiting at a gate, or queued):
 * docs/run-lifecycle.md#a-second-message-to-a-busy-thread.
 */
export const MultitaskStrategySchema = z.enum(['reject', 'enqueue', 'interrupt', 'rollback']).meta({
  id: 'MultitaskStrategy',
  description:
    'when the thread is busy: `reject` answers 409 (the default); `enqueue` queues the run after the runs ahead of ' +
    'it, in order; `interrupt` cancels the active and queued runs, keeping what they produced, and starts this one; ' +
    '`rollback` cancels them and removes the active run with its events and checkpoints (409 when a person decided ' +
    'at one of its stops or one of its tool calls ran)',
});
export type MultitaskStrategy = z.infer<typeof MultitaskStrategySchema>;

export const NodeStatusSchema = z.enum([
  'running',
  'completed',
  'waiting_approval',
  'approved',
  'rejected',
  'error',
  'cancelled',
]);
export type NodeStatus = z.infer<typeof NodeStatusSchema>;

export const RunRequestSchema = z
  .object({
    message: z.string().trim().min(1, 'must not be empty').max(100_000),
    model: z.string().trim().min(1).max(200).optional(),
    thread_id: UuidSchema.optional(),
    project_path: z.string().trim().min(1).max(2000).optional(),
    project_id: UuidSchema.optional().meta({
      description:
        "the project of a new thread; without it the caller's only project. With thread_id it must be the thread's",
    }),
    multitask_strategy: MultitaskStrategySchema.optional(),
  })
  .meta({ id: 'RunRequest' });
export type RunRequest = z.infer<typeof RunRequestSchema>;

/** Where an imported thread came from (docs/http-api.md#export-and-import-of-a-thread). */
export const ThreadImportedSchema = z
  .object({
    from_thread_id: z.uuid().meta({ description: "the thread's id on the installation that exported it" }),
    exported_at: z.string().meta({ description: 'ISO 8601: when it was exported' }),
    imported_at: z.string().meta({ description: 'ISO 8601: when it was imported here' }),
  })
  .meta({ id: 'ThreadImported' });
export type ThreadImported = z.infer<typeof ThreadImportedSchema>;

export const ThreadSchema = z
  .object({
    id: z.uuid(),
    name: z
      .string()
      .nullable()
      .meta({
        description:
          'what the thread is called: its first message (cut near 80 characters) unless renamed; later runs do not ' +
          'change it. Null until the thread gets its first message',
      }),
    agent: z.string(),
    model: z.string().nullable(),
    last_message: z.string().nullable(),
    project_path: z.string().nullable(),
    project_id: z.uuid(),
    created_at: z.string(),
    updated_at: z.string(),
    last_run: z
      .object({ id: z.uuid(), status: RunStatusSchema })
      .nullable()
      .meta({
        description:
          'the run the thread stands at: the one running or waiting for a decision when there is one (a run queued ' +
          'behind it does not hide it), else its latest run; null before its first',
      }),
    draft: z.boolean().meta({ description: 'a thread an unsaved agent was tried in (studio Try)' }),
    comparison_of: z
      .uuid()
      .nullable()
      .meta({ description: "a comparison's thread (POST /runs/{id}/compare): the run it compares; null otherwise" }),
    imported: ThreadImportedSchema.nullable().meta({
      description:
        'a thread imported from another installation (POST /projects/{id}/threads/import): read-only history, where ' +
        'no run starts, resumes, is decided or forked; null for every other thread',
    }),
  })
  .meta({ id: 'Thread' });
export type Thread = z.infer<typeof ThreadSchema>;

export const ThreadPageSchema = z
  .object({ items: z.array(ThreadSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ThreadPage' });
export type ThreadPage = z.infer<typeof ThreadPageSchema>;

export const CreateThreadSchema = z
  .object({
    agent: z.string().min(1).max(200),
    model: z.string().trim().min(1).max(200).optional(),
    project_path: z.string().trim().min(1).max(2000).optional(),
    project_id: z.uuid().optional(),
  })
  .meta({ id: 'CreateThread' });
export type CreateThread = z.infer<typeof CreateThreadSchema>;

export const RenameThreadSchema = z
  .object({ name: z.string().trim().min(1, 'must not be empty').max(200) })
  .meta({ id: 'RenameThread' });
export type RenameThread = z.infer<typeof RenameThreadSchema>;

export const RunSchema = z
  .object({
    id: z.uuid(),
    thread_id: z.uuid(),
    agent: z.string(),
    agent_version: z
      .string()
      .nullable()
      .meta({
        description:
          "the version of its agent the run runs: a stored agent's number, a built-in's content hash; null for runs " +
          'started before agents had versions',
      }),
    model: z.string().nullable(),
    status: RunStatusSchema,
    message: z.string().nullable(),
    project_path: z.string().nullable(),
    output: z.string().nullable(),
    error_detail: z.string().nullable().meta({ description: '`<ExceptionClass>: <message>` when the run failed' }),
    end_reason: z
      .string()
      .nullable()
      .meta({ description: 'the reason given to the rejection or the cancel that ended the run, if any' }),
    started_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'Run' });
export type Run = z.infer<typeof RunSchema>;

/** Something a person should know about a phase's answer: the runtime cut its prompt, or stopped the answer early. */
export const NodeWarningSchema = z
  .object({
    code: z
      .string()
      .meta({ description: '`prompt_cut` (the runtime cut the prompt), `answer_cut` (stopped at length)' }),
    message: z.string(),
  })
  .meta({ id: 'NodeWarning' });
export type NodeWarning = z.infer<typeof NodeWarningSchema>;

export const RunNodeSchema = z
  .object({
    node_id: z.string(),
    status: NodeStatusSchema,
    output: z.string(),
    entered_at: z.number().meta({ description: 'epoch seconds' }),
    exited_at: z.number().nullable().meta({ description: 'epoch seconds; null while the node is open' }),
    first_token_at: z.number().nullable().meta({
      description: "epoch seconds: when the phase's first answer token arrived; null before one did, and for a gate",
    }),
    queue_wait_ms: z
      .number()
      .nullable()
      .meta({ description: "time the phase's model calls waited for a local-runtime slot; null for cloud models" }),
    prompt_tokens: z.number().int().nullable().meta({
      description: 'prompt tokens as the model runtime or provider counted them, over the phase; null if unreported',
    }),
    output_tokens: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'answer tokens as the model runtime or provider counted them; null if unreported' }),
    warnings: z.array(NodeWarningSchema),
    thinking: z
      .string()
      .nullable()
      .meta({ description: "a thinking model's reasoning, kept apart from the output; null when there was none" }),
  })
  .meta({ id: 'RunNode' });
export type RunNode = z.infer<typeof RunNodeSchema>;

export const RouteMatchSchema = z
  .object({
    from: z.string(),
    to: z.string(),
    rule: RoutingRuleSchema,
    /** Absent on routes recorded before the source was kept. */
    source: RuleSourceSchema.optional(),
    at: z.number(),
  })
  .meta({ id: 'RouteMatch' });
export type RouteMatch = z.infer<typeof RouteMatchSchema>;

/** The rule that chose a route, with where it came from, as a checkpoint keeps it. */
export const RouteRuleSchema = z
  .object({ rule: RoutingRuleSchema, source: RuleSourceSchema })
  .meta({ id: 'RouteRule' });
export type RouteRule = z.infer<typeof RouteRuleSchema>;

export const PendingGateSchema = z
  .object({
    node: z.string(),
    question: z.string(),
    required_context: z.array(z.string()),
    /** What the gate shows the approver: each required item with the text the run produced for it. */
    context: z.record(z.string(), z.string()),
    decide_role: RoleSchema.optional().meta({ description: 'the lowest role that may decide it (member if absent)' }),
    approvals_needed: z
      .number()
      .int()
      .optional()
      .meta({ description: 'different people who must approve (1 if absent)' }),
    waiting_since: z.string().optional().meta({ description: 'ISO 8601: when the run stopped here' }),
    expires_at: z.string().nullable().optional().meta({ description: 'ISO 8601: when the gate expires; null: never' }),
    on_expiry: GateExpirySchema.nullable().optional(),
    tool_call: PendingToolCallSchema.optional().meta({
      description: 'set when the run waits for a decision on a tool call (`node` is the phase that made it)',
    }),
  })
  .meta({ id: 'PendingGate' });
export type PendingGate = z.infer<typeof PendingGateSchema>;

/** The four decisions a person makes at a gate, and the one the clock makes. */
export const GateDecisionKindSchema = z.enum(['approve', 'edit', 'respond', 'reject', 'expire']);
export type GateDecisionKind = z.infer<typeof GateDecisionKindSchema>;

/** One decision at a gate, as recorded: it cannot be changed or deleted through the API while its thread exists. */
export const GateDecisionRecordSchema = z
  .object({
    id: z.string(),
    run_id: z.uuid(),
    thread_id: z.uuid(),
    gate: z.string(),
    decision: GateDecisionKindSchema,
    decided_by: z
      .object({ id: z.string().nullable(), name: z.string() })
      .meta({ description: 'who decided; id null and name `expiry` when the gate expired' }),
    role: RoleSchema.nullable().meta({ description: "the decider's role on the run's project at the time" }),
    reason: z.string().nullable(),
    edits: z
      .record(z.string(), z.string())
      .nullable()
      .meta({ description: 'edit: node id → the text that replaced its output' }),
    response: z
      .string()
      .nullable()
      .meta({ description: 'respond: the feedback sent back to the phase before the gate' }),
    outcome: z
      .enum(['approve', 'reject', 'route'])
      .nullable()
      .meta({ description: 'expire: what the expiry did; route continues at `route_to`' }),
    route_to: z
      .string()
      .nullable()
      .meta({ description: 'respond: the phase sent back to; an expiry that routes: the phase it continued at' }),
    tool_call_id: z.string().nullable().meta({ description: 'a decision on a tool call: the call; null at a gate' }),
    arguments: z.string().nullable().meta({
      description: 'a tool call approved or edited: the arguments it runs with, in RFC 8785 canonical JSON',
    }),
    arguments_sha256: z.string().nullable().meta({ description: 'SHA-256 of `arguments`, hex' }),
    policy_source: PolicySourceSchema.nullable().meta({
      description: 'a decision on a tool call: where the policy that asked came from; null at a gate',
    }),
    agent_version: z
      .string()
      .nullable()
      .meta({ description: "the version of the agent the run ran when it stopped (the run's agent_version)" }),
    via: DecisionViaSchema.nullable().meta({
      description:
        'where the decision was taken when not through the API, the studio, MCP or /lg: `slack`, or `email` (a ' +
        "mail's decision link)",
    }),
    decided_at: z.string(),
    imported: z.boolean().meta({
      description: "a decision of an imported thread's run, taken on the installation it was exported from",
    }),
  })
  .meta({ id: 'GateDecisionRecord' });
export type GateDecisionRecord = z.infer<typeof GateDecisionRecordSchema>;

/**
 * A decision at a gate, in the one shape the graph resumes with, the run row keeps while the resumed execution goes on
 * (a takeover resumes the same one), and the studio reads: who decided and what it does to the run.
 */
export const GateDecisionSchema = z
  .object({
    kind: GateDecisionKindSchema,
    reason: z.string().nullable(),
    /** The approvers of the last round, the one who responded or rejected; `expiry` for an expiry. */
    deciders: z.array(z.string()),
    /** edit: node id → the text that replaces its output (every edit at the stop, a later one's over an earlier). */
    edits: z.record(z.string(), z.string()).optional(),
    /** respond: the feedback the phase `to` runs again with. */
    response: z.string().optional(),
    /** respond: the phase sent back to; an expiry that routes: the phase it continues at. */
    to: z.string().nullable().optional(),
    /** expire: what the expiry did. */
    outcome: z.enum(['approve', 'reject', 'route']).optional(),
    /** A decision on a tool call: which call, and the arguments it runs with (canonical JSON) and their SHA-256. */
    call_id: z.string().optional(),
    arguments: z.string().optional(),
    arguments_sha256: z.string().optional(),
    /** A tool call that started and never finished: approved to run again after this many starts. */
    rerun_after: z.number().int().optional(),
  })
  .meta({ id: 'GateDecision' });
export type GateDecision = z.infer<typeof GateDecisionSchema>;

/** Where a decision sends the run: on along the gate's approved edge, along its rejected edge, or to a phase. */
export function decisionPath(decision: GateDecision): 'approve' | 'reject' | 'route' {
  switch (decision.kind) {
    case 'approve':
    case 'edit':
      return 'approve';
    case 'reject':
      return 'reject';
    case 'respond':
      return 'route';
    case 'expire':
      return decision.outcome ?? 'reject';
  }
}

/** A gate's approvals so far: with `approvals_needed` above one, the run waits until enough people approved. */
export const GateApprovalsSchema = z
  .object({
    needed: z.number().int(),
    given: z.number().int(),
    by: z.array(z.object({ id: z.string().nullable(), name: z.string(), at: z.string() })),
  })
  .meta({ id: 'GateApprovals' });
export type GateApprovals = z.infer<typeof GateApprovalsSchema>;

export const ApproveBodySchema = z
  .object({
    round: RoundSchema.optional(),
    reason: z.string().max(2000).optional(),
    edits: z
      .record(NodeIdSchema, z.string().max(200_000))
      .optional()
      .meta({
        description:
          'edit: node id → new text for the output of a phase the gate shows (its required context); downstream ' +
          'phases read the edited text',
      }),
  })
  .default({})
  .meta({ id: 'ApproveBody' });
export type ApproveBody = z.infer<typeof ApproveBodySchema>;

/** A rejection: why, and the round of the stop its person read. */
export const RejectBodySchema = z
  .object({ round: RoundSchema.optional(), reason: ReasonBodySchema.unwrap().shape.reason })
  .default({})
  .meta({ id: 'RejectBody' });
export type RejectBody = z.infer<typeof RejectBodySchema>;

export const RespondBodySchema = z
  .object({
    round: RoundSchema.optional(),
    response: z.string().trim().min(1, 'must not be empty').max(20_000).meta({
      description: 'feedback for the phase before the gate: it runs again with it, and the gate is reached again',
    }),
    reason: ReasonBodySchema.unwrap().shape.reason,
  })
  .meta({ id: 'RespondBody' });
export type RespondBody = z.infer<typeof RespondBodySchema>;

export const RunDetailSchema = RunSchema.extend({
  nodes: z.array(RunNodeSchema),
  routes: z.array(RouteMatchSchema),
  pending_gate: PendingGateSchema.nullable(),
  stop: StopSchema.nullable().meta({ description: 'where the run waits, with its round; null when it does not wait' }),
  sent_to: z
    .array(StopNoticeSchema)
    .meta({ description: 'where the stop was sent (a Slack channel) and how that went; empty when nowhere' }),
  questions: z.array(OpenToolQuestionSchema).meta({
    description:
      "questions the run's tool servers asked a person mid-call that wait for an answer (the run goes on running)",
  }),
  /** False when the graph checkpoint is gone: the run can be shown as a trace but not approved or resumed. */
  resumable: z.boolean(),
  /** Every decision taken at this run's gates, oldest first. */
  decisions: z.array(GateDecisionRecordSchema),
  /** The pending gate's approvals so far; null when no gate waits. */
  approvals: GateApprovalsSchema.nullable(),
  usage: RunUsageSchema.nullable(),
  forked_from: z
    .object({ run_id: z.uuid().nullable(), checkpoint_id: z.string() })
    .nullable()
    .meta({ description: 'a run on a branch: the checkpoint it was forked from, and the run that wrote it' }),
  comparison_of: z.uuid().nullable().meta({
    description:
      'a comparison (POST /runs/{id}/compare): the run it compares, read beside it at GET /runs/{id}/comparison',
  }),
}).meta({ id: 'RunDetail' });
export type RunDetail = z.infer<typeof RunDetailSchema>;

/**
 * What a decision, a cancel, or a run asked for as JSON answers: the run, its status, and where to follow it.
 * `stream_url` is relative to the server and already carries `last_event_id`: the events from this request on.
 */
export const RunAcceptedSchema = z
  .object({
    run_id: z.uuid(),
    thread_id: z.uuid(),
    status: RunStatusSchema,
    last_event_id: z
      .number()
      .int()
      .meta({ description: 'the last event before this request; the stream resumes after it (0 = from the start)' }),
    stream_url: z.string().meta({
      description: 'where to follow the run from here: `/runs/{run_id}/stream?last_event_id=<last_event_id>`',
    }),
    run_url: z.string().meta({ description: 'where to read the run: `/runs/{run_id}`' }),
    approvals: GateApprovalsSchema.optional().meta({
      description: 'an approval at a gate that needs several: the approvals so far (status stays waiting_approval)',
    }),
  })
  .meta({ id: 'RunAccepted' });
export type RunAccepted = z.infer<typeof RunAcceptedSchema>;

/** A credential to follow one run's stream where no Authorization header can be sent (a browser's EventSource). */
export const StreamTokenSchema = z
  .object({
    token: z.string().meta({ description: 'send it as `?access_token=` on GET /runs/{id}/stream of this run only' }),
    expires_at: z.string().meta({
      description: 'ISO 8601; a stream must be opened (or re-opened) before it; one already open goes on',
    }),
    stream_url: z.string().meta({
      description: 'the stream with the token in place; add `&last_event_id=<n>` to resume after an event',
    }),
  })
  .meta({ id: 'StreamToken' });
export type StreamToken = z.infer<typeof StreamTokenSchema>;

export function runAccepted(
  run: { runId: string; threadId: string },
  status: RunStatus,
  lastEventId: number,
): RunAccepted {
  return {
    run_id: run.runId,
    thread_id: run.threadId,
    status,
    last_event_id: lastEventId,
    stream_url: `/runs/${run.runId}/stream?last_event_id=${lastEventId}`,
    run_url: `/runs/${run.runId}`,
  };
}

export const GraphDefinitionSchema = z
  .object({
    name: z.string(),
    kind: AssetKindSchema,
    category: z.string(),
    entry: z.string(),
    phases: z.array(
      PhaseSchema.extend({
        overrides: z.lazy(() => NodeConfigSchema).nullable(),
        overrides_from: z
          .enum(['project', 'organisation'])
          .nullable()
          .meta({ description: 'where the overrides shown were saved: the project itself or its organisation' }),
      }),
    ),
    edges: z.array(EdgeSchema),
  })
  .meta({ id: 'GraphDefinition' });
export type GraphDefinition = z.infer<typeof GraphDefinitionSchema>;

export const NodeConfigSchema = z
  .object({
    instructions_override: z.string().max(50_000).nullable().default(null),
    classification_labels: z
      .string()
      .max(2000)
      .nullable()
      .default(null)
      .meta({ description: 'comma-separated labels' }),
    routing_overrides: z.array(RoutingRuleSchema).max(50).default([]),
    notes: z.string().max(20_000).nullable().default(null),
  })
  .meta({ id: 'NodeConfig' });
export type NodeConfig = z.infer<typeof NodeConfigSchema>;

/** A saved routing rule that lets a run go past a gate without stopping (docs/http-api.md#rules-that-skip-a-gate). */
export const RuleWarningSchema = z
  .object({
    rule: z.number().int().meta({ description: 'the index of the rule in routing_overrides' }),
    gate: z.string().meta({ description: 'the node id of the gate the rule skips' }),
    decide_role: RoleSchema.meta({ description: 'the lowest role that may decide that gate' }),
    message: z.string(),
  })
  .meta({ id: 'RuleWarning' });
export type RuleWarning = z.infer<typeof RuleWarningSchema>;

/** What a save answers: the configuration as saved, and a warning for each gate one of its rules skips. */
export const SavedNodeConfigSchema = NodeConfigSchema.extend({
  warnings: z.array(RuleWarningSchema),
}).meta({ id: 'SavedNodeConfig' });
export type SavedNodeConfig = z.infer<typeof SavedNodeConfigSchema>;

/** What a thread's state holds at one checkpoint: the parts a person reads (not the project context or history). */
export const CheckpointStateSchema = z
  .object({
    message: z.string().nullable().meta({ description: "the run's message at this point" }),
    outputs: z.record(z.string(), z.string()).meta({ description: 'node id → output of each phase completed so far' }),
    route: z.string().nullable().meta({ description: 'the target a routing rule chose after the last phase, if any' }),
    route_rule: RouteRuleSchema.nullable().meta({
      description: 'the routing rule that chose `route`, and where it came from; null when no rule chose it',
    }),
    approved: z
      .boolean()
      .nullable()
      .meta({ description: 'the gate decision: true approved, false rejected, null not decided yet' }),
    decision_reason: z.string().nullable().meta({ description: 'the reason given with the gate decision' }),
    last_node: z.string().nullable().meta({ description: 'the last phase that produced an output' }),
  })
  .meta({ id: 'CheckpointState' });
export type CheckpointState = z.infer<typeof CheckpointStateSchema>;

export const CheckpointSchema = z
  .object({
    checkpoint_id: z.string(),
    parent_checkpoint_id: z
      .string()
      .nullable()
      .meta({ description: 'the checkpoint this one follows; a branch point names the checkpoint it was forked from' }),
    run_id: z.uuid().nullable().meta({ description: 'the run that wrote this checkpoint' }),
    step: z.number().int(),
    source: z.string().meta({
      description:
        "`loop` (written after a step of a run), `update` (a branch point: the state a fork started from), or `input` (the thread's start, named as the first checkpoint's parent)",
    }),
    node: z.string().nullable().meta({
      description: 'the node whose step wrote this checkpoint; null at the start of a run and at a branch point',
    }),
    next: z.array(z.string()).meta({ description: 'the nodes that run next from here; empty once the run has ended' }),
    pending_gate: PendingGateSchema.nullable().meta({
      description: 'set when the run stopped here at a gate, waiting for a decision',
    }),
    created_at: z.string(),
    state: CheckpointStateSchema,
  })
  .meta({ id: 'Checkpoint' });
export type Checkpoint = z.infer<typeof CheckpointSchema>;

export const ForkRequestSchema = z
  .object({
    message: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(100_000)
      .optional()
      .meta({ description: "replaces the run's message from this checkpoint on" }),
    model: z.string().trim().min(1).max(200).optional().meta({ description: 'the model of the new run' }),
    outputs: z.record(NodeIdSchema, z.string().max(200_000)).optional().meta({
      description:
        'node id → new text for the output of a phase completed before this checkpoint: the input the next phases read',
    }),
  })
  .default({})
  .meta({ id: 'ForkRequest' });
export type ForkRequest = z.infer<typeof ForkRequestSchema>;

/** A gate waiting for the caller to decide it, as the approvals inbox lists it. */
export const ApprovalItemSchema = z
  .object({
    run_id: z.uuid(),
    thread_id: z.uuid(),
    agent: z.string(),
    project: z.object({ id: z.uuid(), name: z.string() }),
    message: z.string().nullable().meta({ description: "the run's message, as it was asked" }),
    stop: StopSchema.meta({ description: 'the stop: decide it at POST /stops/{stop.id}/decision, naming its round' }),
    sent_to: z
      .array(StopNoticeSchema)
      .meta({ description: 'where the stop was sent (a Slack channel) and how that went; empty when nowhere' }),
    gate: z.string(),
    question: z.string(),
    excerpt: z.string().meta({ description: 'the start of the gated content, to tell gates apart' }),
    context: z.record(z.string(), z.string()).meta({ description: 'the gated content in full, for an edit' }),
    required_context: z.array(z.string()),
    waiting_since: z.string(),
    expires_at: z.string().nullable(),
    on_expiry: GateExpirySchema.nullable(),
    decide_role: RoleSchema,
    approvals: GateApprovalsSchema,
    tool_call: PendingToolCallSchema.optional().meta({
      description: 'set when the item is a tool call: decide it at /threads/{thread_id}/tool-calls/{call_id}/…',
    }),
    tool_question: ToolQuestionSchema.optional().meta({
      description:
        "set when the item is a tool server's question (`stop.kind` is `question`): answer it at " +
        'POST /stops/{stop.id}/answer; `question` is then its message',
    }),
  })
  .meta({ id: 'ApprovalItem' });
export type ApprovalItem = z.infer<typeof ApprovalItemSchema>;

export const ToolApproveBodySchema = z
  .object({
    round: RoundSchema.optional(),
    reason: z.string().max(2000).optional(),
    arguments: z.record(z.string(), z.unknown()).optional().meta({
      description:
        "edit: the arguments the call runs with instead of the model's; they must fit the tool's input schema (400)",
    }),
    allow_for_thread: z
      .boolean()
      .optional()
      .meta({
        description:
          'also allow this tool for the rest of the thread: its later calls run without asking until the grant is ' +
          'revoked (refused when its policy needs several approvers)',
      }),
  })
  .default({})
  .meta({ id: 'ToolApproveBody' });
export type ToolApproveBody = z.infer<typeof ToolApproveBodySchema>;

export const ToolRespondBodySchema = z
  .object({
    round: RoundSchema.optional(),
    response: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(64 * 1024)
      .meta({
        description: "the tool's answer, written by a person: the call is not run, and the model reads this instead",
      }),
    reason: ReasonBodySchema.unwrap().shape.reason,
  })
  .meta({ id: 'ToolRespondBody' });
export type ToolRespondBody = z.infer<typeof ToolRespondBodySchema>;

/** A tool allowed for the rest of a thread by a person's approval; revoked grants stay in the record. */
export const ToolGrantSchema = z
  .object({
    id: z.string(),
    thread_id: z.uuid(),
    tool: z.string().meta({ description: '`<server>.<tool>`' }),
    call_id: z.string().meta({ description: 'the call whose approval gave the grant' }),
    granted_by: z.object({ id: z.string().nullable(), name: z.string() }),
    granted_at: z.string(),
    revoked_by: z.string().nullable(),
    revoked_at: z.string().nullable().meta({ description: 'null while the grant holds' }),
  })
  .meta({ id: 'ToolGrant' });
export type ToolGrant = z.infer<typeof ToolGrantSchema>;
