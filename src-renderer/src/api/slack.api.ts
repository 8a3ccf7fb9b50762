import {
  SlackConnectionSchema,
  SlackLinksSchema,
  SlackTestResultSchema,
  type ConnectSlackBody,
} from '@contracts/slack';
import { api } from './http';

const org = (orgId: string) => `/orgs/${encodeURIComponent(orgId)}/slack`;

/**
 * Slack as a place to decide stops (docs/approvals.md#slack): an organisation's workspace connection, which its
 * administrators make, test and remove (the token and the signing secret go in, and never come back), the channel of
 * a project's stops, and the signed-in person's links to her Slack identities.
 */
export const slackApi = {
  /** The organisation's connection; 404 (ApiError) when no workspace is connected. */
  connection: (orgId: string) => api(org(orgId), { schema: SlackConnectionSchema }),
  connect: (orgId: string, body: ConnectSlackBody) =>
    api(org(orgId), { method: 'PUT', body, schema: SlackConnectionSchema }),
  disconnect: (orgId: string) => api<void>(org(orgId), { method: 'DELETE' }),
  /** Posts a test message to the organisation's channel: where it went, or Slack's refusal (400, 503). */
  test: (orgId: string) => api(`${org(orgId)}/test`, { method: 'POST', schema: SlackTestResultSchema }),
  /** A project's own channel; null: the organisation's. */
  setProjectChannel: (projectId: string, channel: string | null) =>
    api(`/projects/${encodeURIComponent(projectId)}/slack`, {
      method: 'PUT',
      body: { channel },
      schema: SlackConnectionSchema,
    }),
  links: () => api('/me/slack', { schema: SlackLinksSchema }),
  link: (teamId: string, slackUserId: string) =>
    api('/me/slack', {
      method: 'PUT',
      body: { team_id: teamId, slack_user_id: slackUserId },
      schema: SlackLinksSchema,
    }),
  unlink: () => api<void>('/me/slack', { method: 'DELETE' }),
};
