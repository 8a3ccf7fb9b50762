import { z } from 'zod';
import { EdgeSchema, PhaseSchema, RoutingRuleSchema, AssetKindSchema } from './assets';

/** Run status values (docs/run-lifecycle.md#run-statuses). */
export const RunStatusSchema = z.enum(['running', 'waiting_approval', 'completed', 'rejected', 'error', 'cancelled']);
export type RunStatus = z.infer<typeof RunStatusSchema>;
export const FINISHED_RUN_STATUSES: readonly RunStatus[] = ['completed', 'rejected', 'error', 'cancelled'];

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
    thread_id: z.uuid({ message: 'must be a UUID' }).optional(),
    project_path: z.string().trim().min(1).max(2000).optional(),
    project_id: z.uuid({ message: 'must be a UUID' }).optional().meta({
      description:
        "the project of a new thread; without it the caller's only project. With thread_id it must be the thread's",
    }),
  })
  .meta({ id: 'RunRequest' });
export type RunRequest = z.infer<typeof RunRequestSchema>;

export const ThreadSchema = z
  .object({
    id: z.uuid(),
    agent: z.string(),
    model: z.string().nullable(),
    last_message: z.string().nullable(),
    project_path: z.string().nullable(),
    project_id: z.uuid().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    last_run: z.object({ id: z.uuid(), status: RunStatusSchema }).nullable(),
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

export const RunSchema = z
  .object({
    id: z.uuid(),
    thread_id: z.uuid(),
    agent: z.string(),
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
  .object({ from: z.string(), to: z.string(), rule: RoutingRuleSchema, at: z.number() })
  .meta({ id: 'RouteMatch' });
export type RouteMatch = z.infer<typeof RouteMatchSchema>;

export const PendingGateSchema = z
  .object({
    node: z.string(),
    question: z.string(),
    required_context: z.array(z.string()),
    /** What the gate shows the approver: each required item with the text the run produced for it. */
    context: z.record(z.string(), z.string()),
  })
  .meta({ id: 'PendingGate' });
export type PendingGate = z.infer<typeof PendingGateSchema>;

export const RunDetailSchema = RunSchema.extend({
  nodes: z.array(RunNodeSchema),
  routes: z.array(RouteMatchSchema),
  pending_gate: PendingGateSchema.nullable(),
  /** False when the graph checkpoint is gone: the run can be shown as a trace but not approved or resumed. */
  resumable: z.boolean(),
}).meta({ id: 'RunDetail' });
export type RunDetail = z.infer<typeof RunDetailSchema>;

export const RunAcceptedSchema = z
  .object({ run_id: z.uuid(), thread_id: z.uuid(), status: RunStatusSchema })
  .meta({ id: 'RunAccepted' });
export type RunAccepted = z.infer<typeof RunAcceptedSchema>;

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
