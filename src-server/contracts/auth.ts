import { z } from 'zod';

export const MeSchema = z
  .object({
    user: z.object({
      id: z.string().meta({
        description:
          "the caller's user id, the one decisions record: a signed-in user's, or the fixed id of the API token's " +
          'caller or of the anonymous administrator, which the member routes take as any other',
      }),
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

/**
 * `GET /auth/login?handoff=…`: a random value the studio tab that starts the sign-in keeps (in its session storage).
 * The callback hands it back beside the session token, `/ui#token=…&handoff=…`, and by it the tab knows the token
 * comes from the sign-in it started; a token in any other link is taken only after the person agrees.
 */
export const LoginQuerySchema = z.object({
  handoff: z
    .string()
    .regex(/^[A-Za-z0-9_-]{22,128}$/, '22 to 128 characters: letters, digits, - and _')
    .optional()
    .meta({ description: 'a random value of the studio tab, handed back with the token' }),
});
