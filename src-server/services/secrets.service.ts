import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { OwnedScope } from '../contracts/tenancy';
import { isServiceVariable } from '../config';
import { badRequest, notFound } from '../contracts/errors';
import type { Secret } from '../contracts/secrets';
import type { SecretRow, SecretsRepository } from '../db/secrets.repository';
import type { SecretBox } from '../secrets/secret-box';
import type { AuditLog } from '../auth/audit-log';
import { auditScopeOf, requireScopeOwner } from './scope-owners';

const shown = (row: SecretRow): Secret => ({
  name: row.name,
  scope: { type: row.scope_type, id: row.scope_id },
  set_at: row.set_at.toISOString(),
  set_by: row.set_by_name,
});

/**
 * Project and organisation secrets (docs/tools.md#secrets): written by owners and admins of the scope, never read back
 * (only names and when they were set), sealed with the service's own key, and given to MCP servers by the name their
 * declaration reads: the project's, else its organisation's, else the service's environment.
 */
export function secretsService(deps: {
  access: Pick<Access, 'requireProjectRole' | 'requireOrgConfigRole' | 'orgIdOfProject'>;
  secrets: SecretsRepository;
  box: Pick<SecretBox, 'seal' | 'open'>;
  audit: AuditLog;
}) {
  const { access, secrets, box, audit } = deps;

  return {
    async set(principal: Principal, scope: OwnedScope, name: string, value: string): Promise<Secret> {
      await requireScopeOwner(access, principal, scope);
      if (isServiceVariable(name)) {
        throw badRequest(`${name} is a variable the service reads itself: a tool's server never gets it`);
      }
      const { replaced, row } = await secrets.put(scope, name, box.seal(value), principal);
      await audit.record(principal, {
        action: 'secret.set',
        ...auditScopeOf(scope),
        target: name,
        before: replaced ? { name } : null,
        after: { name, set_at: row.set_at.toISOString() },
      });
      return shown(row);
    },

    /** The names of the scope's secrets and when each was set: readable by whoever may write them. */
    async list(principal: Principal, scope: OwnedScope): Promise<{ secrets: Secret[] }> {
      await requireScopeOwner(access, principal, scope);
      return { secrets: (await secrets.list(scope)).map(shown) };
    },

    async remove(principal: Principal, scope: OwnedScope, name: string): Promise<void> {
      await requireScopeOwner(access, principal, scope);
      if (!(await secrets.remove(scope, name))) throw notFound(`secret ${name} not found`);
      await audit.record(principal, {
        action: 'secret.deleted',
        ...auditScopeOf(scope),
        target: name,
        before: { name },
      });
    },

    /**
     * The values of `names` for a tool server of a run in the project: the project's secret, else the organisation's,
     * else `env` (the service's environment). A name nothing sets is absent. Read at every call, so a changed secret
     * applies from the next one.
     */
    async variables(
      projectId: string,
      names: readonly string[],
      env: Readonly<Record<string, string | undefined>>,
    ): Promise<Record<string, string | undefined>> {
      const sealed = await secrets.forProject(projectId, names);
      return Object.fromEntries(
        names.map((name) => [name, sealed.has(name) ? box.open(sealed.get(name)!) : env[name]]),
      );
    },
  };
}

export type SecretsService = ReturnType<typeof secretsService>;
