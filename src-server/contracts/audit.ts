import { z } from 'zod';

/**
 * Every kind of change the audit log records (docs/audit.md): `<what>.<verb>`. Secrets are recorded by name only.
 */
export const AUDIT_ACTIONS = [
  'role.set',
  'role.removed',
  'token.created',
  'token.revoked',
  'phase_config.set',
  'routing_rules.set',
  'webhook.created',
  'webhook.deleted',
  'schedule.created',
  'schedule.changed',
  'schedule.deleted',
  'tool_policy.set',
  'tool_policy.removed',
  'tool_grant.created',
  'tool_grant.revoked',
  'budget.set',
  'budget.deleted',
  'secret.set',
  'secret.deleted',
  'retention.set',
  'agent.created',
  'agent.changed',
  'agent.deleted',
  'slack.set',
  'slack.removed',
  'email.set',
  'email.removed',
  'oauth_client.registered',
  'oauth_grant.revoked',
  'dataset.created',
  'dataset.deleted',
  'dataset_item.added',
  'dataset_item.changed',
  'dataset_item.deleted',
  'thread.imported',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** How the one who made a change was signed in. */
export const AUDIT_VIAS = ['session', 'personal_token', 'oauth', 'api_token', 'anonymous', 'service'] as const;
export type AuditVia = (typeof AUDIT_VIAS)[number];

export const AuditEventSchema = z
  .object({
    id: z.string().meta({ description: 'ascending in the order the changes were recorded' }),
    at: z.string(),
    actor: z.object({ id: z.string().nullable(), name: z.string() }),
    via: z.enum(AUDIT_VIAS).meta({ description: 'how the actor was signed in' }),
    ip: z.string().nullable().meta({ description: "the request's client address (as TRUST_PROXY reads it)" }),
    org_id: z.string().nullable(),
    project_id: z.string().nullable(),
    action: z.enum(AUDIT_ACTIONS),
    target: z.string().meta({ description: 'what changed: an id, a name, or both' }),
    before: z.unknown().nullable().meta({ description: 'what it was; null when it did not exist (secrets: no value)' }),
    after: z.unknown().nullable().meta({ description: 'what it became; null when it was removed' }),
  })
  .meta({ id: 'AuditEvent' });
export type AuditEvent = z.infer<typeof AuditEventSchema>;

export const AuditQuerySchema = z
  .object({
    org_id: z.uuid().optional().meta({ description: "an organisation's changes, its projects' included" }),
    project_id: z.uuid().optional().meta({ description: "one project's changes" }),
    action: z.enum(AUDIT_ACTIONS).optional(),
    actor_id: z.uuid().optional(),
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    before_id: z
      .string()
      .regex(/^\d{1,19}$/)
      .optional()
      .meta({ description: 'the next page: the `next` of the page before' }),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .refine((q) => !(q.org_id && q.project_id), { message: 'give org_id or project_id, not both', path: ['org_id'] })
  .meta({ id: 'AuditQuery' });
export type AuditQuery = z.infer<typeof AuditQuerySchema>;

export const AuditPageSchema = z
  .object({
    events: z.array(AuditEventSchema).meta({ description: 'newest first' }),
    next: z.string().nullable().meta({ description: 'pass as `before_id` for the next page; null on the last' }),
  })
  .meta({ id: 'AuditPage' });
export type AuditPage = z.infer<typeof AuditPageSchema>;
