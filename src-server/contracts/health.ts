import { z } from 'zod';

export const HealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']).meta({ description: 'degraded when the database is unreachable' }),
    version: z.string(),
    database: z.object({ ok: z.boolean(), error: z.string().optional() }),
    agents: z.number().int(),
    commands: z.number().int(),
    auth: z.object({ enabled: z.boolean(), oidc: z.boolean() }),
  })
  .meta({ id: 'Health' });
export type Health = z.infer<typeof HealthSchema>;
