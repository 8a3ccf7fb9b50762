import { z } from 'zod';

/**
 * The shapes of the LangGraph API as its clients (`@langchain/langgraph-sdk`, useStream, Agent Chat UI, Agent Inbox)
 * send and read them: snake_case, as LangGraph's own server answers. Requests keep unknown keys out of the way (zod
 * strips them): these clients send many options this service has no counterpart for, and ignoring them is what lets
 * an unchanged client work. Answers name every field they carry.
 */

const Json = z.record(z.string(), z.unknown());

/** A value these clients send as `null` when they mean "not given". */
const nullish = <T extends z.ZodType>(schema: T) => schema.nullish().transform((value) => value ?? undefined);

export const LgMetadataSchema = Json.meta({ id: 'LgMetadata', description: 'free JSON, searched by containment' });

export const LgThreadStatusSchema = z.enum(['idle', 'busy', 'interrupted', 'error']).meta({
  id: 'LgThreadStatus',
  description:
    "from the thread's last run: `busy` running or queued, `interrupted` waiting at a gate or a tool call, `error` failed, else `idle`",
});
export type LgThreadStatus = z.infer<typeof LgThreadStatusSchema>;

export const LgInterruptSchema = z
  .object({
    id: z.string().meta({ description: '`<run id>:<event id of the stop>`: one per stop, new at each stop' }),
    value: Json.meta({
      description:
        'the stop as LangChain human-in-the-loop (`action_requests`, `review_configs`) and Agent Inbox ' +
        '(`action_request`, `config`, `description`) read it, and the native `gate` (PendingGate)',
    }),
  })
  .meta({ id: 'LgInterrupt' });
export type LgInterrupt = z.infer<typeof LgInterruptSchema>;

export const LgThreadSchema = z
  .object({
    thread_id: z.uuid(),
    created_at: z.string(),
    updated_at: z.string(),
    state_updated_at: z.string(),
    metadata: LgMetadataSchema,
    status: LgThreadStatusSchema,
    values: Json.meta({ description: '`messages` (human and ai) and `outputs` (node id → output) of the thread' }),
    interrupts: z
      .record(z.string(), z.array(LgInterruptSchema))
      .meta({ description: 'the stop the thread waits at, under its node id; empty when none' }),
  })
  .meta({ id: 'LgThread' });
export type LgThread = z.infer<typeof LgThreadSchema>;

export const LgCheckpointRefSchema = z
  .object({
    thread_id: z.uuid(),
    checkpoint_ns: z.string(),
    checkpoint_id: z.string(),
    checkpoint_map: z.record(z.string(), z.unknown()).nullable().optional(),
  })
  .meta({ id: 'LgCheckpointRef' });

export const LgThreadTaskSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    error: z.string().nullable(),
    interrupts: z.array(LgInterruptSchema),
    checkpoint: LgCheckpointRefSchema.nullable(),
    state: z.null(),
    result: z.null(),
  })
  .meta({ id: 'LgThreadTask' });

export const LgThreadStateSchema = z
  .object({
    values: Json,
    next: z.array(z.string()),
    tasks: z.array(LgThreadTaskSchema),
    checkpoint: LgCheckpointRefSchema,
    parent_checkpoint: LgCheckpointRefSchema.nullable(),
    metadata: Json.meta({ description: '`source`, `step`, `run_id`, `writes`' }),
    created_at: z.string().nullable(),
  })
  .meta({ id: 'LgThreadState' });
export type LgThreadState = z.infer<typeof LgThreadStateSchema>;

export const LgRunStatusSchema = z.enum(['pending', 'running', 'error', 'success', 'timeout', 'interrupted']).meta({
  id: 'LgRunStatus',
  description:
    '`pending` queued; `running`; `success` completed, rejected, or stopped at a gate or a tool call (the thread is ' +
    'then `interrupted`); `error`; `interrupted` cancelled',
});
export type LgRunStatus = z.infer<typeof LgRunStatusSchema>;

export const LgRunSchema = z
  .object({
    run_id: z.uuid(),
    thread_id: z.uuid(),
    assistant_id: z.uuid(),
    created_at: z.string(),
    updated_at: z.string(),
    status: LgRunStatusSchema,
    metadata: LgMetadataSchema,
    multitask_strategy: z.enum(['reject', 'interrupt', 'rollback', 'enqueue']).nullable(),
  })
  .meta({ id: 'LgRun' });
export type LgRun = z.infer<typeof LgRunSchema>;

export const LgAssistantSchema = z
  .object({
    assistant_id: z.uuid(),
    graph_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    config: Json,
    context: Json,
    metadata: LgMetadataSchema,
    version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'LgAssistant' });
export type LgAssistant = z.infer<typeof LgAssistantSchema>;

export const LgGraphSchema = z
  .object({
    nodes: z.array(
      z.object({ id: z.string(), type: z.string(), data: z.union([z.string(), Json]), metadata: Json.optional() }),
    ),
    edges: z.array(
      z.object({
        source: z.string(),
        target: z.string(),
        data: z.string().optional(),
        conditional: z.boolean().optional(),
      }),
    ),
  })
  .meta({ id: 'LgGraph' });

export const LgInfoSchema = z
  .object({
    version: z.string(),
    langgraph_js_version: z.string().optional(),
    flags: z.object({ assistants: z.boolean(), crons: z.boolean(), langsmith: z.boolean() }),
  })
  .meta({ id: 'LgInfo' });

/** `stream_mode`: one mode or several; unknown ones are refused, so a client learns what it will not get. */
export const StreamModeSchema = z.enum([
  'values',
  'updates',
  'messages',
  'messages-tuple',
  'custom',
  'events',
  'debug',
  'tasks',
  'checkpoints',
]);
export type StreamMode = z.infer<typeof StreamModeSchema>;

const StreamModesSchema = z
  .union([StreamModeSchema, z.array(StreamModeSchema).max(10)])
  .transform((mode) => (Array.isArray(mode) ? mode : [mode]));

export const LgResumeSchema = z.unknown().meta({
  description:
    'a decision at the stop the thread waits at: `{decisions: [{type: approve | edit | reject | respond, …}]}` ' +
    '(LangChain human in the loop), `[{type: accept | edit | response | ignore, args}]` (Agent Inbox), or either ' +
    'under the interrupt id (`{<id>: …}`)',
});

export const LgRunCreateSchema = z
  .object({
    assistant_id: z.string().min(1).max(200).meta({ description: 'an assistant_id or a graph_id (agent name)' }),
    input: nullish(Json).meta({
      description:
        '`messages` (the last human message is the run\u2019s message: text, or text parts) or `message` (text)',
    }),
    command: nullish(
      z.object({
        resume: LgResumeSchema.optional(),
        goto: z.unknown().optional(),
        update: z.unknown().optional(),
      }),
    ),
    config: nullish(z.object({ configurable: nullish(Json) })),
    context: nullish(Json),
    metadata: nullish(Json),
    stream_mode: nullish(StreamModesSchema),
    on_disconnect: nullish(z.enum(['cancel', 'continue'])),
    multitask_strategy: nullish(z.enum(['reject', 'interrupt', 'rollback', 'enqueue'])),
    if_not_exists: nullish(z.enum(['create', 'reject'])),
    checkpoint: nullish(Json),
    checkpoint_id: nullish(z.string()),
    interrupt_before: z.unknown().optional(),
    interrupt_after: z.unknown().optional(),
    stream_subgraphs: z.unknown().optional(),
    stream_resumable: z.unknown().optional(),
  })
  .meta({ id: 'LgRunCreate' });
export type LgRunCreate = z.infer<typeof LgRunCreateSchema>;

/** A query's `stream_mode`, as the SDK writes it: repeated, JSON-encoded (`["values"]`), or one mode. */
export const StreamModeQuerySchema = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return undefined;
    const parts = (Array.isArray(raw) ? raw : [raw]).flatMap((part) => {
      if (!part.startsWith('[')) return part.split(',');
      try {
        return JSON.parse(part) as unknown[];
      } catch {
        return [part];
      }
    });
    const modes = z.array(StreamModeSchema).safeParse(parts.filter((part) => part !== ''));
    if (!modes.success) {
      ctx.addIssue({ code: 'custom', message: `unknown stream mode; one of ${StreamModeSchema.options.join(', ')}` });
      return z.NEVER;
    }
    return modes.data;
  })
  .meta({ description: 'the modes to stream (default: those the run was started with)' });

export const ThreadCreateSchema = z
  .object({
    thread_id: nullish(z.uuid()),
    metadata: nullish(Json),
    if_exists: nullish(z.enum(['raise', 'do_nothing'])),
    graph_id: nullish(z.string().max(200)),
  })
  .prefault({})
  .meta({ id: 'LgThreadCreate' });

export const ThreadSearchSchema = z
  .object({
    metadata: nullish(Json),
    ids: nullish(z.array(z.uuid()).max(1000)),
    status: nullish(LgThreadStatusSchema),
    limit: nullish(z.number().int().min(1).max(1000)),
    offset: nullish(z.number().int().min(0).max(100_000)),
    sort_by: nullish(z.enum(['thread_id', 'status', 'created_at', 'updated_at', 'state_updated_at'])),
    sort_order: nullish(z.enum(['asc', 'desc'])),
    values: z.unknown().optional(),
    select: z.unknown().optional(),
  })
  .prefault({})
  .meta({ id: 'LgThreadSearch' });
export type ThreadSearch = z.infer<typeof ThreadSearchSchema>;

export const ThreadPatchSchema = z.object({ metadata: nullish(Json) }).meta({ id: 'LgThreadPatch' });

export const HistorySchema = z
  .object({
    limit: nullish(z.number().int().min(1).max(1000)),
    before: nullish(z.union([z.string(), Json])),
    metadata: nullish(Json),
    checkpoint: nullish(Json),
  })
  .prefault({})
  .meta({ id: 'LgHistoryRequest' });

export const AssistantSearchSchema = z
  .object({
    graph_id: nullish(z.string().max(200)),
    name: nullish(z.string().max(200)),
    metadata: nullish(Json),
    limit: nullish(z.number().int().min(1).max(1000)),
    offset: nullish(z.number().int().min(0)),
  })
  .prefault({})
  .meta({ id: 'LgAssistantSearch' });

/** `getVersions`: which of an assistant's versions, by metadata, a page at a time. */
export const AssistantVersionsSchema = z
  .object({
    metadata: nullish(Json),
    limit: nullish(z.number().int().min(1).max(1000)),
    offset: nullish(z.number().int().min(0)),
  })
  .prefault({})
  .meta({ id: 'LgAssistantVersions' });

export const StateUpdateSchema = z
  .object({
    values: z.unknown().optional(),
    as_node: nullish(z.string().max(200)),
    checkpoint: nullish(Json),
    checkpoint_id: nullish(z.string()),
  })
  .meta({ id: 'LgStateUpdate' });

/** One event of a LangGraph stream, for the document: on the wire `event:`, `data:` (JSON) and `id:`. */
export const LgStreamEventSchema = z
  .object({
    event: z.enum(['metadata', 'values', 'updates', 'messages', 'custom', 'events', 'error']),
    data: z.unknown(),
    id: z.string().optional().meta({ description: '`<n>-<k>`: the k-th event derived from the run event n' }),
  })
  .meta({ id: 'LgStreamEvent' });
