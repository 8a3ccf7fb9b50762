import { AuditPageSchema, type AuditAction } from '@contracts/audit';
import { api } from './http';

/** Whose changes: one project's, or an organisation's with its projects'. */
export type AuditScope = { project_id: string } | { org_id: string };

/**
 * The audit log (docs/audit.md): who changed what and when, newest first, a page at a time (`before_id`: the `next`
 * of the page before). Read by the scope's administrators.
 */
export const auditApi = {
  list: (
    scope: AuditScope,
    options: { action?: AuditAction | null; beforeId?: string | null; limit?: number } = {},
  ) => {
    const query = new URLSearchParams(scope as Record<string, string>);
    if (options.action) query.set('action', options.action);
    if (options.beforeId) query.set('before_id', options.beforeId);
    if (options.limit) query.set('limit', String(options.limit));
    return api(`/audit?${query}`, { schema: AuditPageSchema });
  },
};
