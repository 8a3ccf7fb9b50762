import { z } from 'zod';

export const MeSchema = z
  .object({
    user: z.object({
      id: z.string(),
      name: z.string(),
      email: z.string().nullable(),
      kind: z.enum(['anonymous', 'api_token', 'session', 'visitor']),
    }),
    instance_admin: z.boolean(),
    memberships: z.array(
      z.object({
        scope_type: z.enum(['org', 'team', 'project']),
        scope_id: z.uuid(),
        scope_name: z.string(),
        role: z.enum(['admin', 'owner', 'member', 'viewer']),
      }),
    ),
    oidc_enabled: z.boolean(),
  })
  .meta({ id: 'Me' });
export type Me = z.infer<typeof MeSchema>;
