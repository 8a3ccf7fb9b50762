import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import {
  ConfigureEmailBodySchema,
  EmailRecipientsBodySchema,
  EmailRecipientsSchema,
  EmailSettingsSchema,
  EmailTestBodySchema,
  EmailTestResultSchema,
} from '../contracts/email';
import type { EmailService } from '../services/email.service';
import type { Api } from './api';
import { DECISION_PAGE_HEADERS, decisionLinkPage, LINK_STATUS } from './decision-link-page';

const TokenParams = z.object({
  token: z
    .string()
    .max(200)
    .meta({ description: "the link's single-use token, as the mail gave it (never logged; only its hash is kept)" }),
});

const DecisionLinkFormSchema = z
  .object({
    decision: z.enum(['approve', 'reject']),
    reason: z.string().max(2000).optional(),
  })
  .meta({ id: 'DecisionLinkForm' });

const html = (description: string) => ({ description, contentType: 'text/html', schema: z.string() });
const PAGES = {
  200: html('the stop, and a form to confirm a decision'),
  404: html('not a link this service sent (a changed character is none)'),
  409: html('the stop was decided elsewhere or ended, or changed since the mail (another round)'),
  410: html('the link was used, or it expired'),
};

/**
 * Mail (docs/approvals.md#mail): the instance's mail server, whom stops are mailed to, and the pages a mail's decision
 * link opens. Those answer HTML, to people; everything else here is JSON.
 */
export function emailRoutes(api: Api, email: EmailService): void {
  const tag = 'approvals';
  api.route({
    method: 'get',
    path: '/settings/email',
    operationId: 'getEmailSettings',
    tag,
    summary: "The instance's mail server (never its password)",
    errors: { 403: 'needs the instance administrator (forbidden)', 404: 'no mail server is set (not_found)' },
    responses: { 200: { description: 'the settings', schema: EmailSettingsSchema } },
    handler: ({ ctx }) => email.getSettings(ctx.principal),
  });
  api.route({
    method: 'put',
    path: '/settings/email',
    operationId: 'configureEmail',
    tag,
    summary: "Set the instance's mail server, which stops' mails go through (the instance administrator)",
    description:
      "The host follows the webhooks' address rule: one on the server's own network is refused unless " +
      'WEBHOOK_ALLOW_PRIVATE_URLS is true. The password is kept encrypted and never shown again.',
    body: ConfigureEmailBodySchema,
    errors: {
      400: 'a field is wrong, or the host is on the server’s own network or does not resolve (invalid_request)',
      403: 'needs the instance administrator (forbidden)',
    },
    responses: { 200: { description: 'the settings as saved', schema: EmailSettingsSchema } },
    handler: ({ body, ctx }) => email.configure(ctx.principal, body),
  });
  api.route({
    method: 'post',
    path: '/settings/email/test',
    operationId: 'testEmail',
    tag,
    summary: 'Send a test mail through the mail server (to you, or the address given)',
    body: EmailTestBodySchema,
    errors: {
      400: 'no address to send to (invalid_request)',
      403: 'needs the instance administrator (forbidden)',
      503: 'the mail server did not take it (unavailable), or the database is unreachable (database_unavailable)',
    },
    responses: { 200: { description: 'taken by the mail server', schema: EmailTestResultSchema } },
    handler: ({ body, ctx }) => email.test(ctx.principal, body.to),
  });
  for (const scope of ['org', 'project'] as const) {
    const path = scope === 'org' ? '/orgs/{id}/email' : '/projects/{id}/email';
    const who = scope === 'org' ? 'its admins' : 'its owners';
    api.route({
      method: 'get',
      path,
      operationId: scope === 'org' ? 'getEmailRecipients' : 'getProjectEmailRecipients',
      tag,
      summary: `Whom the ${scope === 'org' ? "organisation's" : "project's"} stops are mailed to`,
      params: z.object({ id: UuidSchema }),
      responses: { 200: { description: 'the recipients (null: none here)', schema: EmailRecipientsSchema } },
      handler: ({ params, ctx }) => email.recipients(ctx.principal, scope, params.id),
    });
    api.route({
      method: 'put',
      path,
      operationId: scope === 'org' ? 'setEmailRecipients' : 'setProjectEmailRecipients',
      tag,
      summary: `Choose whom the ${scope === 'org' ? "organisation's" : "project's"} stops are mailed to (${who})`,
      description:
        scope === 'org'
          ? "A project's own choice comes before its organisation's."
          : "In place of its organisation's choice; null: the organisation's again.",
      params: z.object({ id: UuidSchema }),
      body: EmailRecipientsBodySchema,
      errors: { 403: `needs ${scope === 'org' ? 'admin on the organisation' : 'owner on the project'} (forbidden)` },
      responses: { 200: { description: 'the recipients as saved', schema: EmailRecipientsSchema } },
      handler: ({ params, body, ctx }) => email.setRecipients(ctx.principal, scope, params.id, body.recipients),
    });
  }
  api.route({
    method: 'get',
    path: '/stop-links/{token}',
    operationId: 'openDecisionLink',
    tag,
    public: true,
    pageErrors: true,
    summary: "A mail's decision link: the stop and a form to confirm (an HTML page; opening it decides nothing)",
    params: TokenParams,
    responses: PAGES,
    handler: async ({ params, res }) => {
      const view = await email.openLink(params.token);
      res.status(LINK_STATUS[view.state]).set(DECISION_PAGE_HEADERS).type('html').send(decisionLinkPage(view));
    },
  });
  api.route({
    method: 'post',
    path: '/stop-links/{token}',
    operationId: 'confirmDecisionLink',
    tag,
    public: true,
    form: true,
    pageErrors: true,
    summary: "Confirm a mail's decision: once, as the person it was sent to, with her role checked now (an HTML page)",
    params: TokenParams,
    body: DecisionLinkFormSchema,
    responses: {
      ...PAGES,
      200: html('decided'),
      400: html('a reject without its reason'),
      403: html('the person the mail was sent to may no longer decide it (her role)'),
    },
    handler: async ({ params, body, res }) => {
      const outcome = await email.decideByLink(params.token, body.decision, body.reason ?? null);
      const status = outcome.decided ? 200 : (outcome.status ?? LINK_STATUS[outcome.view.state]);
      res.status(status).set(DECISION_PAGE_HEADERS).type('html').send(decisionLinkPage(outcome.view, outcome));
    },
  });
}
