import { z } from 'zod';

export const ProviderIdSchema = z.enum(['local', 'cloud_a', 'cloud_b', 'cloud_c']);
export type ProviderId = z.infer<typeof ProviderIdSchema>;

export const LocalContextSchema = z
  .object({
    context_length: z.number().int().nullable().meta({ description: "the model's own context length (/api/show)" }),
    num_ctx: z.number().int().meta({ description: 'the context window every call asks for (options.num_ctx)' }),
    budget: z.number().int().meta({ description: 'estimated prompt tokens a call may take (the context budget)' }),
    answer_tokens: z.number().int().meta({ description: 'room kept for the answer (options.num_predict)' }),
    lowered: z
      .boolean()
      .meta({ description: 'true when the model holds less than LOCAL_LLM_MAX_CONTEXT_TOKENS needs' }),
    message: z.string().nullable().meta({ description: 'says why the budget was lowered, when it was' }),
  })
  .meta({ id: 'LocalContext' });
export type LocalContext = z.infer<typeof LocalContextSchema>;

export const ModelsSchema = z
  .object({
    providers: z.array(
      z.object({
        id: ProviderIdSchema,
        name: z.string(),
        /** Cloud providers: their key variable is set. The local runtime is always configured. */
        configured: z.boolean(),
        /** For the local runtime: whether /api/tags answered. */
        reachable: z.boolean().nullable(),
        error: z.string().nullable(),
        models: z.array(
          z.object({
            id: z.string().meta({ description: 'the model string to run with, e.g. local:llama3' }),
            name: z.string(),
            context: LocalContextSchema.nullable()
              .optional()
              .meta({ description: "local models: the context window the service gives the model's calls" }),
          }),
        ),
      }),
    ),
    default_model: z
      .object({
        id: z.string().meta({
          description:
            'what a run uses when neither it nor its thread names one: DEFAULT_MODEL, or the model chosen at PUT /models/default',
        }),
        available: z.boolean().nullable().meta({
          description: 'false when it is a local model the runtime does not have; null when that cannot be told',
        }),
        message: z.string().nullable(),
      })
      .meta({ id: 'DefaultModel' }),
  })
  .meta({ id: 'Models' });
export type Models = z.infer<typeof ModelsSchema>;

export const QueueStatusSchema = z
  .object({
    runtime: z.string(),
    slots: z.number().int(),
    active: z.number().int(),
    waiting: z.number().int(),
    served: z.number().int(),
    timed_out: z.number().int(),
    average_call_s: z.number().nullable(),
  })
  .meta({ id: 'QueueStatus' });
export type QueueStatus = z.infer<typeof QueueStatusSchema>;

/** Where a pull stands, as the runtime streams it: its status line and the bytes of every layer so far. */
export interface PullProgress {
  status: string;
  total: number;
  completed: number;
}

export const ModelPullStatusSchema = z.enum(['pulling', 'done', 'failed', 'cancelled']);

export const ModelPullSchema = z
  .object({
    id: z.uuid(),
    model: z.string(),
    status: ModelPullStatusSchema,
    detail: z.string().meta({ description: "the runtime's last status line, e.g. `pulling dde5aa3fc5ff`" }),
    total: z.number().int().meta({ description: 'bytes of the layers announced so far' }),
    completed: z.number().int().meta({ description: 'bytes of them received so far' }),
    error: z.string().nullable(),
    cancel_requested: z.boolean(),
    started_by: z.string(),
    started_at: z.string(),
    updated_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'ModelPull' });
export type ModelPull = z.infer<typeof ModelPullSchema>;

export const LocalModelSchema = z
  .object({
    name: z.string(),
    size: z.number().nullable().meta({ description: 'bytes on disk' }),
    family: z.string().nullable(),
    parameter_size: z.string().nullable().meta({ description: 'e.g. 3.2B' }),
    quantization: z.string().nullable().meta({ description: 'e.g. Q4_K_M' }),
    modified_at: z.string().nullable().meta({ description: 'when the runtime last pulled or changed it' }),
    context_length: z.number().int().nullable().meta({ description: "the model's own context length" }),
    capabilities: z.array(z.string()).meta({ description: '`tools`, `thinking` where the runtime says so' }),
    loaded_until: z
      .string()
      .nullable()
      .meta({ description: 'loaded now, until this time (the runtime unloads it then); null when not loaded' }),
    measured: z
      .object({
        phases: z.number().int().meta({ description: 'the recent phases of runs with this model measured here' }),
        tokens_per_s: z.number().nullable().meta({ description: 'median answer tokens a second over those phases' }),
        load_s: z.number().nullable().meta({ description: 'the last load this process saw, in seconds' }),
      })
      .meta({ description: 'what this service measured of the model' }),
  })
  .meta({ id: 'LocalModel' });
export type LocalModel = z.infer<typeof LocalModelSchema>;

export const LocalModelsSchema = z
  .object({
    reachable: z.boolean(),
    error: z.string().nullable(),
    models: z.array(LocalModelSchema),
    pulls: z
      .array(ModelPullSchema)
      .meta({ description: 'pulls under way, and the last ones that ended; empty unless the caller manages models' }),
    default_model: z.string().meta({ description: 'what a run uses when neither it nor its thread names a model' }),
    may_manage: z.boolean().meta({ description: 'whether the caller may pull, delete and set the default' }),
  })
  .meta({ id: 'LocalModels' });
export type LocalModels = z.infer<typeof LocalModelsSchema>;

export const PullModelBodySchema = z
  .object({
    name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .meta({ description: 'e.g. llama3.2:3b', examples: ['llama3.2'] }),
  })
  .meta({ id: 'PullModelBody' });

export const ModelNameBodySchema = z
  .object({
    model: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .meta({ examples: ['llama3.2'] }),
  })
  .meta({ id: 'ModelNameBody' });
