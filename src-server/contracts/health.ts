import { z } from 'zod';

export const HealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']).meta({ description: 'degraded when the database is unreachable' }),
    version: z.string(),
    database: z.object({ ok: z.boolean(), error: z.string().optional() }),
    schema_version: z.string().nullable().meta({
      description:
        'the newest schema migration the database holds (docs/upgrading.md), e.g. 0001_baseline; null while the database does not answer',
    }),
    /** Without the runtime's address: this endpoint is public (GET /models shows it to signed-in callers). */
    local_runtime: z.object({
      reachable: z.boolean(),
      models: z.array(z.string()),
      loaded: z
        .array(
          z.object({
            name: z.string(),
            context_length: z.number().int().nullable(),
            expires_at: z.string().nullable(),
          }),
        )
        .meta({
          description: 'the models the runtime has in memory now (/api/ps): a call to another waits for a load',
        }),
      error: z
        .string()
        .nullable()
        .meta({ description: 'e.g. ConnectionRefusedError: … when the runtime is not running' }),
    }),
    agents: z.number().int(),
    commands: z.number().int(),
    auth: z.object({ enabled: z.boolean(), oidc: z.boolean() }),
    stdio_mcp_servers: z.enum(['confined', 'unconfined', 'refused']).meta({
      description:
        "how this server runs the stdio MCP servers agents declare: confined (a PID namespace of their own, where the service's processes and their secrets are out of sight), unconfined (this machine cannot confine them; the desktop and per-launch-token servers run them anyway, and the studio's Settings warn), or refused (a server where people sign in, on such a machine)",
    }),
  })
  .meta({ id: 'Health' });
export type Health = z.infer<typeof HealthSchema>;
