import { z } from 'zod';

export const ProviderIdSchema = z.enum(['local', 'cloud_a', 'cloud_b', 'cloud_c']);
export type ProviderId = z.infer<typeof ProviderIdSchema>;

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
          }),
        ),
      }),
    ),
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
