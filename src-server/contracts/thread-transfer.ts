import { z } from 'zod';
import { UuidSchema } from './common';
import { conflict } from './errors';
import {
  GateDecisionKindSchema,
  NodeStatusSchema,
  NodeWarningSchema,
  PendingGateSchema,
  RouteMatchSchema,
  RunStatusSchema,
  ThreadImportedSchema,
} from './runs';
import { DecisionViaSchema } from './slack';
import { RoleSchema } from './tenancy';
import { PolicySourceSchema, ToolReplaySchema } from './tools';

/**
 * A thread exported as one JSON document, and imported into another installation as read-only history
 * (docs/http-api.md#export-and-import-of-a-thread). The same schema describes what GET /threads/{id}/export answers
 * and what POST /projects/{id}/threads/import takes.
 */
export const THREAD_EXPORT_FORMAT = 'agent-workflow-thread';
export const THREAD_EXPORT_VERSION = 1;

/** What an export leaves out, said in the document itself. */
export const THREAD_EXPORT_LEFT_OUT = [
  'model usage (the model calls and their cost: spent on the installation that ran them)',
  'tool grants (the tools allowed for the rest of the thread: nothing runs in an imported thread)',
  "tool servers' questions, and the recorded model turns a run replays when it resumes",
  'the Slack messages, mails and webhook deliveries of its stops',
  'the project folders of the thread and its runs (paths on the machine that exported it)',
];

/** The 409 of anything that would start, resume, decide, fork or cancel a run of an imported thread. */
export function importedThreadConflict(threadId: string) {
  return conflict(
    `thread ${threadId} is imported read-only history: its runs are not started, resumed, decided, forked or ` +
      'cancelled here',
  );
}

/** A moment as PostgreSQL keeps it, to the microsecond: ISO 8601 with its offset. */
const Moment = z.iso.datetime({ offset: true });
const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
/** A JSON object as it is stored (a checkpoint, a run's internal records): carried as it is. */
const Stored = z.record(z.string(), z.unknown());

export const ExportedNodeSchema = z
  .object({
    key: z.string().nullable().meta({ description: '`<node>#<visit>`' }),
    node_id: z.string(),
    status: NodeStatusSchema,
    output: z.string(),
    entered_at: z.number(),
    exited_at: z.number().nullable(),
    first_token_at: z.number().nullable(),
    queue_wait_ms: z.number().nullable(),
    prompt_tokens: z.number().int().nullable(),
    output_tokens: z.number().int().nullable(),
    warnings: z.array(NodeWarningSchema),
    thinking: z.string().nullable(),
  })
  .meta({ id: 'ExportedNode' });

export const ExportedEventSchema = z
  .object({
    seq: z.number().int().min(0).meta({ description: "the event's id (a row of token events: the first one's)" }),
    seq_last: z.number().int().nullable().meta({ description: "a row of several token events: the last one's id" }),
    type: z.string().min(1),
    data: z.string().meta({ description: "the event's JSON text as it was sent (a row of several: one per line)" }),
  })
  .meta({ id: 'ExportedEvent' });

export const ExportedToolCallSchema = z
  .object({
    id: z.string().min(1),
    node: z.string(),
    tool: z.string(),
    arguments: z.string(),
    arguments_sha256: z.string(),
    policy: z.enum(['allow', 'ask', 'granted', 'covered', 'deny']),
    rerunnable: z.boolean(),
    decision: Stored.nullable(),
    attempts: z.number().int().min(0),
    started_at: Moment.nullable(),
    result: z.string().nullable(),
    is_error: z.boolean().nullable(),
    finished_at: Moment.nullable(),
    created_at: Moment,
    replay: ToolReplaySchema.nullable().meta({ description: "a comparison's call: what it did with it; else null" }),
  })
  .meta({ id: 'ExportedToolCall' });

export const ExportedRunSchema = z
  .object({
    id: UuidSchema,
    agent: z.string().min(1),
    agent_version: z.string().nullable(),
    manifest_hash: z.string().nullable(),
    model: z.string().nullable(),
    status: RunStatusSchema,
    message: z.string().nullable(),
    output: z.string().nullable(),
    error_detail: z.string().nullable(),
    end_reason: z.string().nullable(),
    started_at: Moment,
    finished_at: Moment.nullable(),
    queued_at: Moment.nullable(),
    routes: z.array(RouteMatchSchema),
    event_seq: z.number().int().min(0),
    seq_reserved: z.number().int().min(0),
    attempts: z.number().int().min(0),
    handovers: z.number().int().min(0),
    pending_gate: PendingGateSchema.nullable().meta({
      description: 'the gate it waits at; null when it does not wait',
    }),
    gate_waiting_since: Moment.nullable(),
    gate_expires_at: Moment.nullable(),
    gate_checkpoint_id: z.string().nullable(),
    forked_from: Stored.nullable(),
    resume_decision: Stored.nullable(),
    local_runtime: z.boolean().nullable(),
    trace_context: z.string().nullable(),
    comparison_of: UuidSchema.nullable(),
    nodes: z.array(ExportedNodeSchema).meta({ description: 'its node rows, in the order they were written' }),
    events: z.array(ExportedEventSchema).meta({ description: 'its stored event stream, oldest first' }),
    tool_calls: z.array(ExportedToolCallSchema).meta({ description: 'the records of its tool calls' }),
  })
  .meta({ id: 'ExportedRun' });

export const ExportedDecisionSchema = z
  .object({
    id: z
      .string()
      .regex(/^[1-9]\d{0,17}$/, 'must be a positive whole number')
      .meta({ description: "the decision's id; an import gives it a new one unless keep_ids=true" }),
    run_id: UuidSchema.meta({ description: "one of the document's runs" }),
    gate: z.string(),
    wait_seq: z.number().int(),
    round: z.number().int().min(0),
    decision: GateDecisionKindSchema,
    decided_by: z.string().nullable(),
    decided_by_name: z.string(),
    role: RoleSchema.nullable().meta({ description: "the decider's role on the run's project at the time" }),
    reason: z.string().nullable(),
    edits: z.record(z.string(), z.string()).nullable(),
    response: z.string().nullable(),
    outcome: z.enum(['approve', 'reject', 'route']).nullable(),
    route_to: z.string().nullable(),
    tool_call_id: z.string().nullable(),
    arguments: z.string().nullable(),
    arguments_sha256: z.string().nullable(),
    policy_source: PolicySourceSchema.nullable().meta({
      description: 'a decision on a tool call: where its policy came from',
    }),
    via: DecisionViaSchema.nullable().meta({ description: 'where it was taken when not through the API' }),
    decided_at: Moment,
  })
  .meta({ id: 'ExportedDecision' });

export const ExportedCheckpointsSchema = z
  .object({
    checkpoints: z.array(
      z.object({
        checkpoint_ns: z.string(),
        checkpoint_id: z.string().min(1),
        parent_checkpoint_id: z.string().nullable(),
        type: z.string().nullable(),
        checkpoint: Stored,
        metadata: Stored,
      }),
    ),
    blobs: z.array(
      z.object({
        checkpoint_ns: z.string(),
        channel: z.string(),
        version: z.string(),
        type: z.string(),
        blob: Base64.nullable(),
      }),
    ),
    writes: z.array(
      z.object({
        checkpoint_ns: z.string(),
        checkpoint_id: z.string().min(1),
        task_id: z.string(),
        idx: z.number().int(),
        channel: z.string(),
        type: z.string().nullable(),
        blob: Base64,
      }),
    ),
  })
  .meta({
    id: 'ExportedCheckpoints',
    description:
      "the LangGraph checkpointer's rows of the thread (checkpoints, channel values, pending writes), as stored; " +
      'values in base64',
  });

export const ThreadExportSchema = z
  .object({
    format: z.literal(THREAD_EXPORT_FORMAT, {
      error: `must be "${THREAD_EXPORT_FORMAT}": the document is not an export of a thread`,
    }),
    version: z.literal(THREAD_EXPORT_VERSION, {
      error: (issue) =>
        `version ${JSON.stringify(issue.input)} of the export format is not one this server imports (it imports ` +
        `version ${THREAD_EXPORT_VERSION})`,
    }),
    exported_at: Moment,
    service_version: z.string().meta({ description: 'the version of the service that exported it' }),
    schema_migration: z.string().meta({ description: 'the newest schema migration of the installation it came from' }),
    left_out: z.array(z.string()).meta({ description: 'what the document does not hold, in words' }),
    thread: z.object({
      id: UuidSchema,
      name: z.string().nullable(),
      agent: z.string().min(1),
      model: z.string().nullable(),
      last_message: z.string().nullable(),
      created_at: Moment,
      updated_at: Moment,
      metadata: Stored,
      draft: z.boolean(),
      comparison_of: UuidSchema.nullable(),
      imported: ThreadImportedSchema.nullable().meta({ description: 'an export of a thread imported before' }),
    }),
    runs: z.array(ExportedRunSchema),
    decisions: z.array(ExportedDecisionSchema).meta({ description: "every decision at the runs' stops, oldest first" }),
    checkpoints: ExportedCheckpointsSchema,
  })
  .meta({ id: 'ThreadExport' });
export type ThreadExport = z.infer<typeof ThreadExportSchema>;
export type ExportedRun = z.infer<typeof ExportedRunSchema>;
export type ExportedDecision = z.infer<typeof ExportedDecisionSchema>;
