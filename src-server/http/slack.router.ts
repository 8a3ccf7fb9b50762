import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import {
  ConnectSlackBodySchema,
  LinkSlackUserBodySchema,
  SlackConnectionSchema,
  SlackLinksSchema,
  SlackProjectChannelBodySchema,
  SlackTestResultSchema,
} from '../contracts/slack';
import type { SlackService } from '../services/slack.service';
import type { Api } from './api';

/** What Slack posts to the request URL: one form field holding the interaction's JSON. */
const SlackInteractionFormSchema = z
  .object({ payload: z.string().max(1_000_000).meta({ description: "the interaction's JSON, as Slack sends it" }) })
  .meta({ id: 'SlackInteractionForm' });

const SlackInteractionAnswerSchema = z
  .object({
    response_action: z
      .enum(['clear', 'errors'])
      .optional()
      .meta({ description: "a modal's submission: closed (clear), or shown again with `errors` at its fields" }),
    errors: z.record(z.string(), z.string()).optional(),
  })
  .meta({ id: 'SlackInteractionAnswer' });

const SIGNATURE_HEADERS = z.object({
  'x-slack-request-timestamp': z.string().optional().meta({ description: 'seconds since 1970, as Slack signed it' }),
  'x-slack-signature': z.string().optional().meta({ description: '`v0=<hex HMAC-SHA256>` of `v0:<timestamp>:<body>`' }),
});

/**
 * Slack (docs/approvals.md#slack): an organisation's workspace connection and its channels, a person's link to her
 * Slack identity, and the request URL Slack posts its interactions to.
 */
export function slackRoutes(api: Api, slack: SlackService): void {
  const tag = 'approvals';
  const orgParams = z.object({ id: UuidSchema });
  api.route({
    method: 'put',
    path: '/orgs/{id}/slack',
    operationId: 'connectSlack',
    tag,
    summary: "Connect the organisation's Slack workspace: its stops are posted to the channel, decided by buttons",
    description:
      'The bot token is checked with Slack (auth.test) and names the workspace; the token and the signing secret are ' +
      'kept encrypted and never shown again. Connecting again replaces them (docs/approvals.md#slack).',
    params: orgParams,
    body: ConnectSlackBodySchema,
    errors: {
      400: 'a field is wrong, or Slack refused the token (invalid_request)',
      403: 'needs the admin role on the organisation (forbidden)',
      503: 'Slack could not be reached (unavailable), or the database is unreachable (database_unavailable)',
    },
    responses: { 200: { description: 'the connection', schema: SlackConnectionSchema } },
    handler: ({ params, body, ctx }) => slack.connect(ctx.principal, params.id, body),
  });
  api.route({
    method: 'get',
    path: '/orgs/{id}/slack',
    operationId: 'getSlackConnection',
    tag,
    summary: "The organisation's Slack connection, its channels and its latest messages' deliveries",
    params: orgParams,
    errors: { 403: 'needs the admin role on the organisation (forbidden)' },
    responses: { 200: { description: 'the connection (never its secrets)', schema: SlackConnectionSchema } },
    handler: ({ params, ctx }) => slack.get(ctx.principal, params.id),
  });
  api.route({
    method: 'delete',
    path: '/orgs/{id}/slack',
    operationId: 'disconnectSlack',
    tag,
    summary: 'Disconnect Slack: stops are no longer posted, and its buttons decide nothing',
    params: orgParams,
    errors: { 403: 'needs the admin role on the organisation (forbidden)' },
    responses: { 204: { description: 'disconnected; its secrets are deleted' } },
    handler: async ({ params, ctx }) => slack.disconnect(ctx.principal, params.id),
  });
  api.route({
    method: 'post',
    path: '/orgs/{id}/slack/test',
    operationId: 'testSlack',
    tag,
    summary: "Post a test message to the organisation's channel",
    params: orgParams,
    errors: {
      400: 'Slack refused the message: the channel, or the bot is not in it (invalid_request)',
      403: 'needs the admin role on the organisation (forbidden)',
      503: 'Slack could not be reached (unavailable), or the database is unreachable (database_unavailable)',
    },
    responses: { 200: { description: 'posted', schema: SlackTestResultSchema } },
    handler: ({ params, ctx }) => slack.test(ctx.principal, params.id),
  });
  api.route({
    method: 'put',
    path: '/projects/{id}/slack',
    operationId: 'setProjectSlackChannel',
    tag,
    summary: "The channel of a project's stops, instead of its organisation's (the organisation's admins)",
    params: z.object({ id: UuidSchema }),
    body: SlackProjectChannelBodySchema,
    errors: { 403: 'needs the admin role on the organisation (forbidden)' },
    responses: { 200: { description: "the organisation's connection", schema: SlackConnectionSchema } },
    handler: ({ params, body, ctx }) => slack.setProjectChannel(ctx.principal, params.id, body.channel),
  });
  api.route({
    method: 'get',
    path: '/me/slack',
    operationId: 'getSlackLinks',
    tag,
    summary: 'The Slack identities that decide as you',
    responses: { 200: { description: 'your links', schema: SlackLinksSchema } },
    handler: async ({ ctx }) => ({ links: await slack.links(ctx.principal) }),
  });
  api.route({
    method: 'put',
    path: '/me/slack',
    operationId: 'linkSlackUser',
    tag,
    summary: 'Link your Slack identity: your clicks in Slack decide as you',
    description:
      'Made by yourself, the link counts fully in a quorum; a link made from your verified email counts for at most ' +
      'one approval through Slack at a stop (docs/approvals.md#who-decides-in-slack).',
    body: LinkSlackUserBodySchema,
    errors: {
      400: 'a field is wrong, or the caller is not a signed-in person (invalid_request)',
      409: 'that Slack identity is linked to another person (conflict)',
    },
    responses: { 200: { description: 'your links', schema: SlackLinksSchema } },
    handler: async ({ body, ctx }) => ({
      links: await slack.link(ctx.principal, body.team_id, body.slack_user_id),
    }),
  });
  api.route({
    method: 'delete',
    path: '/me/slack',
    operationId: 'unlinkSlackUser',
    tag,
    summary: 'Unlink your Slack identities: clicks in Slack no longer decide as you',
    errors: { 404: 'no Slack identity is linked to you (not_found)' },
    responses: { 204: { description: 'unlinked' } },
    handler: async ({ ctx }) => slack.unlink(ctx.principal),
  });
  api.route({
    method: 'post',
    path: '/integrations/slack/interactions',
    operationId: 'slackInteraction',
    tag,
    public: true,
    form: true,
    summary: "Slack's request URL for the buttons and modals of stops' messages (signed by Slack, not a token)",
    description:
      "Verified with the signing secret of the connection the payload's team and app name: the v0 signature of the " +
      'timestamp and body, a timestamp within five minutes, and a signature taken once; anything else answers 401 and ' +
      'decides nothing. A click decides as the Slack user’s linked person, through the same decision as every door.',
    headers: SIGNATURE_HEADERS,
    body: SlackInteractionFormSchema,
    errors: { 401: 'not a signed Slack interaction: a bad or old signature, or a replay (unauthorized)' },
    responses: {
      200: {
        description: 'taken; for a modal, closed or shown again with errors',
        schema: SlackInteractionAnswerSchema,
      },
    },
    handler: async ({ req, rawBody }) => {
      return slack.interact(
        rawBody ?? Buffer.alloc(0),
        req.get('x-slack-request-timestamp'),
        req.get('x-slack-signature'),
      );
    },
  });
}
