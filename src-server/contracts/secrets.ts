import { z } from 'zod';

/** A secret's name is a variable's name, as an MCP server's declaration names it (`TRACKER_TOKEN`). */
export const SECRET_NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;

export const SecretNameParams = z.object({
  id: z.uuid(),
  name: z
    .string()
    .regex(SECRET_NAME, 'a secret is named as an environment variable: capitals, digits and _, e.g. TRACKER_TOKEN'),
});

export const SetSecretSchema = z
  .object({
    value: z
      .string()
      .min(1, 'must not be empty')
      .max(16_384)
      .meta({ description: 'the value: written once, never read back' }),
  })
  .strict()
  .meta({ id: 'SetSecret' });

/** What anyone may know of a secret: its name and when it was set, never its value. */
export const SecretSchema = z
  .object({
    name: z.string(),
    scope: z.object({ type: z.enum(['org', 'project']), id: z.uuid() }),
    set_at: z.string(),
    set_by: z.string().nullable().meta({ description: 'who set it, by name' }),
  })
  .meta({ id: 'Secret' });
export type Secret = z.infer<typeof SecretSchema>;

export const SecretListSchema = z.object({ secrets: z.array(SecretSchema) }).meta({ id: 'SecretList' });
