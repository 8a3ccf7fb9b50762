import { AuditPageSchema, AuditQuerySchema } from '../contracts/audit';
import type { Api } from './api';
import type { AppDeps } from './deps';

/** The audit log (docs/audit.md): read by administrators of the scope, never changed. */
export function auditRoutes(api: Api, { audit }: Pick<AppDeps, 'audit'>): void {
  api.route({
    method: 'get',
    path: '/audit',
    operationId: 'listAuditEvents',
    tag: 'audit',
    summary: 'Who changed what and when: roles, tokens, configuration, credentials, budgets, agents',
    description:
      "With `project_id`, one project's changes (its administrators); with `org_id`, an organisation's and its " +
      "projects' (the organisation's administrators); with neither, every change (instance administrators). Newest " +
      'first; page with `before_id`. Secrets appear by name only.',
    query: AuditQuerySchema,
    errors: {
      403: 'needs the admin role on the scope; the whole log needs an instance administrator (forbidden)',
      404: 'no such project or organisation that the caller can see',
    },
    responses: { 200: { description: 'a page of the log', schema: AuditPageSchema } },
    handler: ({ query, ctx }) => audit.list(ctx.principal, query),
  });
}
