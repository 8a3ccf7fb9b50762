import { z } from 'zod';

/**
 * Mail as a place to decide stops (docs/approvals.md#mail): the instance's mail server, whom an organisation's or a
 * project's stops are mailed to, and the decision links the mails carry.
 */
export const ConfigureEmailBodySchema = z
  .object({
    host: z
      .string()
      .trim()
      .min(1)
      .max(253)
      .regex(/^[A-Za-z0-9.-]+$|^\[?[0-9A-Fa-f:.]+\]?$/, 'must be a host name or an address')
      .meta({
        description: "the mail server's host; an address on the server's own network needs WEBHOOK_ALLOW_PRIVATE_URLS",
      }),
    port: z.number().int().min(1).max(65535),
    secure: z
      .boolean()
      .meta({ description: 'TLS from the start (port 465); false: STARTTLS when the server offers it (587, 25)' }),
    from: z.email().meta({ description: 'the sender of the mails' }),
    user: z.string().max(500).optional(),
    password: z
      .string()
      .max(2000)
      .optional()
      .meta({ description: 'kept encrypted and never shown again; left out, the one set before stays' }),
  })
  .meta({
    id: 'ConfigureEmailBody',
    examples: [
      { host: 'smtp.example.com', port: 587, secure: false, from: 'agents@example.com', user: 'agents', password: '…' },
    ],
  });
export type ConfigureEmailBody = z.infer<typeof ConfigureEmailBodySchema>;

export const EmailSettingsSchema = z
  .object({
    host: z.string(),
    port: z.number().int(),
    secure: z.boolean(),
    from: z.string(),
    user: z.string().nullable(),
    password_set: z.boolean().meta({ description: 'whether a password is kept (it is never shown)' }),
    updated_by: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'EmailSettings' });
export type EmailSettings = z.infer<typeof EmailSettingsSchema>;

export const EmailTestBodySchema = z
  .object({ to: z.email().optional().meta({ description: 'where to send it; default: your own address' }) })
  .default({})
  .meta({ id: 'EmailTestBody' });

export const EmailTestResultSchema = z
  .object({ to: z.string(), message_id: z.string().nullable() })
  .meta({ id: 'EmailTestResult' });

export const EmailRecipientsBodySchema = z
  .object({
    recipients: z
      .union([z.literal('deciders'), z.array(z.email()).max(50)])
      .nullable()
      .meta({
        description:
          '`deciders`: the people whose role reaches the stop\u2019s, at their address; or named addresses (each must be a ' +
          'person of the service to decide from the mail); null: no mail',
      }),
  })
  .meta({ id: 'EmailRecipientsBody', examples: [{ recipients: 'deciders' }, { recipients: ['ann@example.com'] }] });

export const EmailRecipientsSchema = z
  .object({
    scope_type: z.enum(['org', 'project']),
    scope_id: z.uuid(),
    recipients: z.union([z.literal('deciders'), z.array(z.string())]).nullable(),
    updated_by: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'EmailRecipients' });
export type EmailRecipients = z.infer<typeof EmailRecipientsSchema>;
