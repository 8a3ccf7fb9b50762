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

/**
 * What every personal access token starts with: a leaked one is recognisable (secret scanners, the log mask), and
 * the server tells it from a session JWT by this alone.
 */
export const PERSONAL_TOKEN_PREFIX = 'svcpat_';
/** The whole form of a token: the prefix, then 32 random bytes in base64url (43 characters). */
export const PERSONAL_TOKEN_PATTERN = /^svcpat_[A-Za-z0-9_-]{43}$/;
/** The most live (unrevoked) tokens one person may hold. */
export const PERSONAL_TOKENS_MAX = 50;

export const PersonalTokenSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    prefix: z.string().meta({
      description: 'the first characters of the token (`svcpat_` and six more), to recognise it; never the secret',
    }),
    created_at: z.string(),
    last_used_at: z
      .string()
      .nullable()
      .meta({ description: 'when a request last came with it, to about a minute; null if never' }),
  })
  .meta({ id: 'PersonalToken' });
export type PersonalToken = z.infer<typeof PersonalTokenSchema>;

export const CreatePersonalTokenSchema = z
  .object({
    name: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(100)
      .meta({ description: 'what it is for, e.g. "Claude Desktop on my laptop"' }),
  })
  .meta({ id: 'CreatePersonalToken' });
export type CreatePersonalToken = z.infer<typeof CreatePersonalTokenSchema>;

export const CreatedPersonalTokenSchema = PersonalTokenSchema.extend({
  token: z.string().meta({
    description:
      'The token, `svcpat_` and 43 characters: shown in this answer only (the server keeps its SHA-256). ' +
      'Send it as `Authorization: Bearer <token>`.',
  }),
}).meta({ id: 'CreatedPersonalToken' });
export type CreatedPersonalToken = z.infer<typeof CreatedPersonalTokenSchema>;
