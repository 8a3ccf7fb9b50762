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
        id: z.string().meta({ description: 'DEFAULT_MODEL: what a run uses when neither it nor its thread names one' }),
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
