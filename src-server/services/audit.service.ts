import type { Access } from '../auth/access';
import type { AuditedChange, AuditLog } from '../auth/audit-log';
import type { Principal } from '../auth/principal';
import { requestOrigin } from '../auth/request-origin';
import type { AuditPage, AuditQuery, AuditVia } from '../contracts/audit';
import { forbidden } from '../contracts/errors';
import type { AuditRepository } from '../db/audit.repository';

/** Fields whose values are credentials: kept out of the log whatever change carries them. */
const CREDENTIAL_FIELD = /(secret|token|password|private_key|api_key|value)$/i;
const REDACTED = '[redacted]';

/** A copy of `value` with every credential field's value replaced (a secret's name stays, its value never does). */
export function redacted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redacted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      CREDENTIAL_FIELD.test(key) && inner !== null && inner !== undefined && typeof inner !== 'boolean'
        ? REDACTED
        : redacted(inner),
    ]),
  );
}

function viaOf(principal: Principal): AuditVia {
  if (principal.via) return principal.via;
  if (principal.kind === 'visitor') return 'anonymous';
  return principal.kind;
}

/**
 * The audit log (docs/audit.md): every change to who may do what, to configuration and to credentials, with who made
 * it, how she was signed in, from which address, and what it was before and after. Written when the change is made;
 * read by administrators of the scope.
 */
export function auditService(deps: {
  audit: AuditRepository;
  access: Pick<Access, 'requireProjectRole' | 'requireOrgConfigRole' | 'orgIdOfProject'>;
}) {
  const { audit, access } = deps;
  return {
    async record(principal: Principal, change: AuditedChange): Promise<void> {
      const projectId = change.projectId ?? null;
      const orgId = change.orgId ?? (projectId ? await access.orgIdOfProject(projectId).catch(() => null) : null);
      await audit.append({
        actorId: principal.id,
        actorName: principal.name,
        via: viaOf(principal),
        ip: requestOrigin()?.ip ?? null,
        orgId,
        projectId,
        action: change.action,
        target: change.target,
        before: redacted(change.before ?? null),
        after: redacted(change.after ?? null),
      });
    },

    /**
     * A page of the log, newest first: a project's for its administrators, an organisation's (its projects'
     * included) for the organisation's, everything for instance administrators. Another tenant's scope answers 404.
     */
    async list(principal: Principal, query: AuditQuery): Promise<AuditPage> {
      if (query.project_id) await access.requireProjectRole(principal, query.project_id, 'admin', 'project');
      else if (query.org_id) await access.requireOrgConfigRole(principal, query.org_id, 'admin');
      else if (!principal.instanceAdmin) {
        throw forbidden('the whole audit log is for instance administrators: give org_id or project_id');
      }
      const { events, more } = await audit.page({
        projectId: query.project_id,
        orgId: query.org_id,
        action: query.action,
        actorId: query.actor_id,
        from: query.from ? new Date(query.from) : undefined,
        to: query.to ? new Date(query.to) : undefined,
        beforeId: query.before_id,
        limit: query.limit,
      });
      return { events, next: more ? events.at(-1)!.id : null };
    },
  };
}

export type AuditService = ReturnType<typeof auditService> & AuditLog;
