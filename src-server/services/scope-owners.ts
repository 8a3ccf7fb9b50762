import type { Access } from '../auth/access';
import type { AuditedChange } from '../auth/audit-log';
import type { Principal } from '../auth/principal';
import type { OwnedScope } from '../contracts/tenancy';

/**
 * What an organisation or a project keeps for itself (budgets, secrets) is set and read by the owners and admins of
 * that scope: a project's on the project (404 to whoever cannot see it), an organisation's on the organisation itself
 * (a role only inside it is 403).
 */
export async function requireScopeOwner(
  access: Pick<Access, 'requireProjectRole' | 'requireOrgConfigRole'>,
  principal: Principal,
  scope: OwnedScope,
): Promise<void> {
  if (scope.type === 'project') await access.requireProjectRole(principal, scope.id, 'owner', 'project');
  else await access.requireOrgConfigRole(principal, scope.id, 'owner');
}

/** Where a change to the scope is filed in the audit log: a project's (the log finds its organisation), or an
 * organisation's.
 */
export const auditScopeOf = (scope: OwnedScope): Pick<AuditedChange, 'projectId' | 'orgId'> =>
  scope.type === 'project' ? { projectId: scope.id } : { orgId: scope.id, projectId: null };
