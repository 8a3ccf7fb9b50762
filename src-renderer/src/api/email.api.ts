import {
  EmailRecipientsSchema,
  EmailSettingsSchema,
  EmailTestResultSchema,
  type ConfigureEmailBody,
  type EmailRecipients,
} from '@contracts/email';
import { api } from './http';

/** The scopes whose stops are mailed: an organisation's choice, and a project's own in its place. */
export type EmailScope = EmailRecipients['scope_type'];

const recipientsPath = (scope: EmailScope, id: string) =>
  `/${scope === 'org' ? 'orgs' : 'projects'}/${encodeURIComponent(id)}/email`;

/**
 * Mail as a place to decide stops (docs/approvals.md#mail): the instance's mail server, which only its administrator
 * reads and sets (the password goes in and never comes back), a test mail through it, and whom an organisation's or a
 * project's stops are mailed to.
 */
export const emailApi = {
  /** The mail server; 404 (ApiError) when none is set, 403 for anyone but the instance administrator. */
  settings: () => api('/settings/email', { schema: EmailSettingsSchema }),
  /** Without `password`, the one kept stays; an empty one removes it. */
  configure: (body: ConfigureEmailBody) => api('/settings/email', { method: 'PUT', body, schema: EmailSettingsSchema }),
  /** A test mail to `to`, or to the caller's own address: where it went, or the mail server's refusal (400, 503). */
  test: (to?: string) =>
    api('/settings/email/test', { method: 'POST', body: to ? { to } : {}, schema: EmailTestResultSchema }),
  recipients: (scope: EmailScope, id: string) => api(recipientsPath(scope, id), { schema: EmailRecipientsSchema }),
  /** null: nobody for an organisation; for a project, its organisation's choice again. */
  setRecipients: (scope: EmailScope, id: string, recipients: EmailRecipients['recipients']) =>
    api(recipientsPath(scope, id), { method: 'PUT', body: { recipients }, schema: EmailRecipientsSchema }),
};
