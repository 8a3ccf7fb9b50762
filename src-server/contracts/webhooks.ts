import { z } from 'zod';
import { BudgetSchema } from './budgets';
import { StopSchema } from './stops';
import { UuidSchema } from './common';

/**
 * The events a webhook may subscribe to (docs/webhooks.md#events). Each is written to the outbox by a trigger in the
 * same transaction as the change it reports (db/migrations/), so the run engine never calls the webhook code.
 */
export const WEBHOOK_EVENTS = [
  'gate.waiting',
  'gate.decided',
  'gate.expired',
  'question.asked',
  'question.answered',
  'run.completed',
  'run.failed',
  'budget.warning',
  'budget.exceeded',
] as const;
export const WebhookEventTypeSchema = z.enum(WEBHOOK_EVENTS).meta({ id: 'WebhookEventType' });
export type WebhookEventType = z.infer<typeof WebhookEventTypeSchema>;

export const WebhookSchema = z
  .object({
    id: z.uuid(),
    url: z.string(),
    events: z.array(WebhookEventTypeSchema),
    project_id: z
      .uuid()
      .nullable()
      .meta({ description: 'the project whose runs it reports; null for an organisation' }),
    org_id: z
      .uuid()
      .nullable()
      .meta({ description: "the organisation whose projects' runs it reports; null for a project" }),
    created_at: z.string(),
  })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof WebhookSchema>;

export const CreatedWebhookSchema = WebhookSchema.extend({
  secret: z.string().meta({
    description:
      'The signing secret, `whsec_` and base64: shown in this answer only. Verify each delivery with it ' +
      '(Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature).',
  }),
}).meta({ id: 'CreatedWebhook' });
export type CreatedWebhook = z.infer<typeof CreatedWebhookSchema>;

/** Exactly one scope: a webhook reports one project's runs, or those of every project of one organisation. */
const oneScope = (value: { project_id?: string; org_id?: string }) =>
  Boolean(value.project_id) !== Boolean(value.org_id);
const ONE_SCOPE = { message: 'give either project_id or org_id', path: ['project_id'] };

export const CreateWebhookSchema = z
  .object({
    url: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(2000)
      .meta({
        description:
          "where deliveries are POSTed: http or https, without credentials; an address on the server's own network " +
          '(loopback, link-local, private) only with WEBHOOK_ALLOW_PRIVATE_URLS',
        // The scheme, for a client that checks a request before sending it; the server checks the rest.
        pattern: '^\\s*[Hh][Tt][Tt][Pp][Ss]?://',
      }),
    events: z
      .array(WebhookEventTypeSchema)
      .min(1, 'name at least one event')
      .refine((events) => new Set(events).size === events.length, 'name each event once')
      .meta({ uniqueItems: true }),
    project_id: UuidSchema.optional().meta({ description: 'the project whose runs it reports (admin there)' }),
    org_id: UuidSchema.optional().meta({
      description: "the organisation whose projects' runs it reports (admin on the organisation)",
    }),
  })
  .refine(oneScope, ONE_SCOPE)
  .meta({
    id: 'CreateWebhook',
    description: 'Give exactly one of project_id and org_id.',
    oneOf: (['project_id', 'org_id'] as const).map((scope) => ({
      properties: { [scope]: { type: 'string' } },
      required: [scope],
    })),
  });
export type CreateWebhook = z.infer<typeof CreateWebhookSchema>;

/** GET /webhooks: one of the two, as for registering. */
export const WebhookScopeQuerySchema = z
  .object({
    project_id: UuidSchema.optional().meta({ description: "a project's webhooks (give this or org_id)" }),
    org_id: UuidSchema.optional().meta({ description: "an organisation's own webhooks (give this or project_id)" }),
  })
  .refine(oneScope, ONE_SCOPE);

/** What every payload's `data` carries: the run, and where it belongs. */
const runData = {
  run_id: z.uuid(),
  thread_id: z.uuid(),
  project_id: z.uuid(),
  agent: z.string(),
  model: z.string().nullable(),
};
/** Where the run waits, as every door names it: decide it at POST /stops/{stop.id}/decision with its round. */
const stopData = {
  stop: StopSchema.optional().meta({
    description:
      "the stop (a gate, or a tool call with its id, tool and arguments' hash) and its round after this change: " +
      'decide it with POST /stops/{stop_id}/decision naming the round; absent only from deliveries queued before API 1.12',
  }),
};
const decisionData = {
  ...runData,
  gate: z.string().meta({ description: 'the gate node, or for a tool call the phase that made it' }),
  decided_at: z.string(),
  ...stopData,
};

/** A tool server's question (docs/approvals.md#questions-from-tool-servers), answered at POST /stops/{id}/answer. */
const questionData = {
  ...runData,
  gate: z.string().meta({ description: 'the phase whose tool call asks' }),
  tool: z.string(),
  server: z.string(),
  mode: z.enum(['form', 'url']),
  stop: StopSchema,
};

/**
 * The body of each delivery, Standard Webhooks' recommended shape: `type`, `timestamp` (ISO 8601, when the change
 * was committed) and `data`. Built in SQL by the triggers, so these schemas and the migrations change together.
 */
const PAYLOADS = [
  z.object({
    type: z.literal('gate.waiting'),
    timestamp: z.string(),
    data: z.object({
      ...runData,
      gate: z.string().meta({ description: 'the gate node, or for a tool call the phase that made it' }),
      question: z.string().nullable(),
      expires_at: z.string().nullable().meta({ description: 'when the gate expires; null: never' }),
      ...stopData,
    }),
  }),
  z.object({
    type: z.literal('gate.decided'),
    timestamp: z.string(),
    data: z.object({
      ...decisionData,
      decision: z.enum(['approve', 'edit', 'respond', 'reject']),
      decided_by: z.object({ id: z.string().nullable(), name: z.string() }),
      role: z.string().nullable().meta({ description: "the decider's role on the run's project" }),
      reason: z.string().nullable(),
      response: z.string().nullable().meta({ description: 'respond: the feedback sent back' }),
      route_to: z.string().nullable(),
      edited: z.array(z.string()).meta({ description: 'edit: the phases whose output was replaced' }),
    }),
  }),
  z.object({
    type: z.literal('gate.expired'),
    timestamp: z.string(),
    data: z.object({
      ...decisionData,
      outcome: z.enum(['approve', 'reject', 'route']).nullable().meta({ description: 'what the expiry did' }),
      route_to: z.string().nullable(),
    }),
  }),
  z.object({
    type: z.literal('question.asked'),
    timestamp: z.string(),
    data: z.object({
      ...questionData,
      question: z.string().meta({ description: "the server's message: untrusted text" }),
      expires_at: z.string(),
    }),
  }),
  z.object({
    type: z.literal('question.answered'),
    timestamp: z.string(),
    data: z.object({
      ...questionData,
      action: z.enum(['accept', 'decline', 'cancel', 'expired', 'withdrawn']).meta({
        description: "the person's answer, or `expired` (nobody answered in time), `withdrawn` (its call ended)",
      }),
      answered_by: z.object({ id: z.string(), name: z.string().nullable() }).nullable(),
      answered_at: z.string().nullable(),
    }),
  }),
  z.object({
    type: z.literal('run.completed'),
    timestamp: z.string(),
    data: z.object({ ...runData, output: z.string().nullable(), finished_at: z.string().nullable() }),
  }),
  z.object({
    type: z.literal('run.failed'),
    timestamp: z.string(),
    data: z.object({ ...runData, error_detail: z.string().nullable(), finished_at: z.string().nullable() }),
  }),
  ...(['budget.warning', 'budget.exceeded'] as const).map((type) =>
    z.object({
      type: z.literal(type),
      timestamp: z.string(),
      data: BudgetSchema.extend({
        scope_name: z.string(),
        project_id: z.uuid().meta({ description: 'the project whose run reached the level' }),
      }).meta({
        description:
          type === 'budget.warning'
            ? 'a budget reached its warning level (`warn_at`): sent once per budget and period'
            : 'a budget was spent: new runs are refused and running ones stop until `period_end`',
      }),
    }),
  ),
] as const;

/** `gate.waiting` → `GateWaitingWebhook`: each payload's name as a component of the OpenAPI document. */
const componentName = (type: string) => `${type.replace(/(^|\.)(\w)/g, (_, __, c: string) => c.toUpperCase())}Webhook`;

export const WebhookPayloadSchema = z
  .discriminatedUnion(
    'type',
    PAYLOADS.map((payload) =>
      payload.meta({ id: componentName(payload.shape.type.value) }),
    ) as unknown as typeof PAYLOADS,
  )
  .meta({ id: 'WebhookPayload', description: 'The JSON body of a delivery, the same on every attempt.' });
export type WebhookPayload = z.infer<typeof WebhookPayloadSchema>;

export const DeliveryAttemptSchema = z
  .object({
    attempt: z.number().int().meta({ description: '1 for the first' }),
    attempted_at: z.string(),
    duration_ms: z.number().nullable().meta({ description: 'null when the process sending it stopped meanwhile' }),
    http_status: z.number().int().nullable().meta({ description: "the receiver's status; null when none came" }),
    error: z.string().nullable().meta({ description: 'why it failed without a status, or a redirect not followed' }),
  })
  .meta({ id: 'DeliveryAttempt' });
export type DeliveryAttempt = z.infer<typeof DeliveryAttemptSchema>;

export const DeliverySchema = z
  .object({
    id: z
      .uuid()
      .meta({ description: 'the webhook-id header: the same on every attempt, for receivers to deduplicate' }),
    event_type: WebhookEventTypeSchema,
    status: z.enum(['pending', 'delivered', 'failed']).meta({
      description: 'pending: not yet answered 2xx, tried again at next_attempt_at; failed: every attempt failed',
    }),
    created_at: z.string(),
    next_attempt_at: z.string().nullable(),
    delivered_at: z.string().nullable(),
    payload: WebhookPayloadSchema,
    attempts: z.array(DeliveryAttemptSchema).meta({ description: 'oldest first' }),
  })
  .meta({ id: 'Delivery' });
export type Delivery = z.infer<typeof DeliverySchema>;
