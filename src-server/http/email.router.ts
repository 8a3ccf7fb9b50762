import type { Request, Response } from 'express';
import { z } from 'zod';
import { errorBody } from '../contracts/errors';
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

const PAGE = { contentType: 'text/html', schema: z.string() };
const LINK_ERRORS = {
  404: 'not a link this service sent: a changed character is none (not_found)',
  409: 'the link was used or expired, or its stop was decided elsewhere, ended or changed since the mail (conflict)',
} as const;
const CODES = { 400: 'invalid_request', 403: 'forbidden', 404: 'not_found', 409: 'conflict' } as const;

/**
 * A link's answer: the page to a browser (it asks for HTML), and to anything else the page on success or the error
 * envelope, as every other route answers.
 */
function answer(req: Request, res: Response, status: number, page: string, message: string): void {
  res.set(DECISION_PAGE_HEADERS).status(status);
  if (status < 300 || req.accepts(['json', 'html']) === 'html') res.type('html').send(page);
  else res.json(errorBody(CODES[status as keyof typeof CODES] ?? 'conflict', message));
}

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
    errors: LINK_ERRORS,
    responses: { 200: { description: 'the stop, and a form to confirm a decision', ...PAGE } },
    handler: async ({ params, req, res }) => {
      const view = await email.openLink(params.token);
      answer(req, res, LINK_STATUS[view.state], decisionLinkPage(view), 'message' in view ? view.message : '');
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
    errors: {
      ...LINK_ERRORS,
      400: 'a field is wrong, or a reject without its reason (invalid_request)',
      403: 'the person the mail was sent to may no longer decide it: her role (forbidden)',
    },
    responses: { 200: { description: 'decided', ...PAGE } },
    handler: async ({ params, body, req, res }) => {
      const outcome = await email.decideByLink(params.token, body.decision, body.reason ?? null);
      const status = outcome.decided ? 200 : (outcome.status ?? LINK_STATUS[outcome.view.state]);
      answer(req, res, status, decisionLinkPage(outcome.view, outcome), outcome.message);
    },
  });
}
