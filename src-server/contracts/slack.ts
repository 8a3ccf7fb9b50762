import { z } from 'zod';

/**
 * Slack as a place to decide stops (docs/approvals.md#slack): an organisation's workspace connection, the channel each
 * project's stops go to, and the link between a person of this service and her Slack identity.
 */

/** A channel's id (`C0123ABC`), or its name as people write it (`#approvals`). */
export const SlackChannelSchema = z
  .string()
  .trim()
  .regex(/^(#?[a-z0-9][a-z0-9._-]{0,79}|[CGD][A-Z0-9]{2,20})$/, 'must be a channel id (C0123ABC) or #name')
  .meta({ description: 'a channel id (`C0123ABC`) or name (`#approvals`); the bot must be a member of it' });

export const ConnectSlackBodySchema = z
  .object({
    bot_token: z
      .string()
      .trim()
      .regex(/^xox[a-z]-[A-Za-z0-9-]{8,250}$/, 'must be a bot token (xoxb-…)')
      .meta({ description: "the app's bot token (`xoxb-…`): kept encrypted, never shown again" }),
    signing_secret: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9]{16,128}$/, "must be the app's signing secret (letters and digits)")
      .meta({
        description: "the app's signing secret, which verifies its interactions: kept encrypted, never shown again",
      }),
    channel: SlackChannelSchema.meta({ description: "the channel that gets the organisation's stops" }),
  })
  .meta({
    id: 'ConnectSlackBody',
    examples: [
      { bot_token: 'xoxb-1111-2222-abcdef', signing_secret: '8f742231b10e8888abcd99yyyzzz85a5', channel: '#approvals' },
    ],
  });
export type ConnectSlackBody = z.infer<typeof ConnectSlackBodySchema>;

export const SlackProjectChannelBodySchema = z
  .object({
    channel: SlackChannelSchema.nullable().meta({
      description: "the channel for this project's stops; null: the organisation's channel",
    }),
  })
  .meta({ id: 'SlackProjectChannelBody' });

/** What is sent where about a stop, and how it went: Slack's messages now, mail later. */
export const StopDeliveryStatusSchema = z.enum(['pending', 'delivered', 'failed']);

export const SlackDeliverySchema = z
  .object({
    id: z.string(),
    stop_id: z.string().meta({ description: 'the stop the message is about' }),
    status: StopDeliveryStatusSchema.meta({
      description: 'pending: to be sent (again, after a failure: see attempts); failed: given up',
    }),
    attempts: z.number().int(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    last_attempt_at: z.string().nullable(),
  })
  .meta({ id: 'SlackDelivery' });
export type SlackDelivery = z.infer<typeof SlackDeliverySchema>;

export const SlackConnectionSchema = z
  .object({
    org_id: z.uuid(),
    team_id: z.string().meta({ description: "the workspace's id, as Slack named it when the token was checked" }),
    team_name: z.string().nullable(),
    app_id: z.string().nullable().meta({ description: 'the Slack app the bot belongs to; interactions must name it' }),
    bot_user_id: z.string().nullable(),
    channel: z.string().meta({ description: "the channel that gets the organisation's stops" }),
    project_channels: z
      .record(z.uuid(), z.string())
      .meta({ description: "project id → the channel of that project's stops, where it is not the organisation's" }),
    connected_by: z.string().meta({ description: 'who connected the workspace' }),
    connected_at: z.string(),
    request_url: z
      .string()
      .nullable()
      .meta({ description: "what to enter as the app's Interactivity Request URL (from PUBLIC_URL; null without it)" }),
    deliveries: z
      .array(SlackDeliverySchema)
      .meta({ description: 'the latest messages posted or updated, newest first' }),
  })
  .meta({ id: 'SlackConnection' });
export type SlackConnection = z.infer<typeof SlackConnectionSchema>;

export const SlackTestResultSchema = z
  .object({ channel: z.string(), ts: z.string().meta({ description: "the test message's timestamp in Slack" }) })
  .meta({ id: 'SlackTestResult' });

export const SlackUserIdSchema = z
  .string()
  .trim()
  .regex(/^[UW][A-Z0-9]{2,20}$/, 'must be a Slack member id (U0123ABC)');
export const SlackTeamIdSchema = z
  .string()
  .trim()
  .regex(/^[TE][A-Z0-9]{2,20}$/, 'must be a Slack workspace id (T0123ABC)');

export const LinkSlackUserBodySchema = z
  .object({
    team_id: SlackTeamIdSchema.meta({ description: "the workspace's id (`T0123ABC`)" }),
    slack_user_id: SlackUserIdSchema.meta({
      description: 'your member id in that workspace (`U0123ABC`: Slack, your profile, ⋮, Copy member ID)',
    }),
  })
  .meta({ id: 'LinkSlackUserBody', examples: [{ team_id: 'T0123ABC', slack_user_id: 'U0123ABC' }] });

export const SlackLinkSchema = z
  .object({
    team_id: z.string(),
    slack_user_id: z.string(),
    linked_by_self: z
      .boolean()
      .meta({ description: 'true when the person made the link herself; false when made from a verified email' }),
    linked_at: z.string(),
  })
  .meta({ id: 'SlackLink' });
export type SlackLink = z.infer<typeof SlackLinkSchema>;

export const SlackLinksSchema = z
  .object({ links: z.array(SlackLinkSchema) })
  .meta({ id: 'SlackLinks', description: 'the Slack identities that decide as you' });

/** Where a stop was sent, and how that went: shown beside the stop in the studio and the inbox. */
export const StopNoticeSchema = z
  .object({
    via: z.enum(['slack', 'email']),
    to: z.string().meta({ description: 'the Slack channel, or the addresses mailed' }),
    status: StopDeliveryStatusSchema,
    error: z.string().nullable().meta({ description: 'the last failure, while it is retried or after it gave up' }),
  })
  .meta({ id: 'StopNotice' });
export type StopNotice = z.infer<typeof StopNoticeSchema>;

/** Where a decision came from, when not the API, the studio, MCP or the LangGraph door. */
export const DecisionViaSchema = z.enum(['slack', 'email']);
export type DecisionVia = z.infer<typeof DecisionViaSchema>;
