import type { Scope } from '../contracts/tenancy';
import type { TenancyRepository } from '../db/tenancy.repository';
import type { UsersRepository } from '../db/users.repository';
import { badRequest, conflict, forbidden, notFound } from '../contracts/errors';
import { getLogger } from '../log';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID, DEFAULT_TEAM_ID, type Role, type ScopeType } from '../contracts/tenancy';
import { atLeast, type Access } from './access';
import type { AuditLog } from './audit-log';
import type { Principal } from './principal';

const log = getLogger('svc.auth');
const DEFAULTS = new Set([DEFAULT_ORG_ID, DEFAULT_TEAM_ID, DEFAULT_PROJECT_ID]);
const PARENT: Record<ScopeType, ScopeType | null> = { org: null, team: 'org', project: 'team' };
const NAME: Record<ScopeType, string> = { org: 'organisation', team: 'team', project: 'project' };

/**
 * The hierarchy's rules (docs/http-api.md#access-control): org admins manage teams, team admins manage projects,
 * project owners manage members (and admins of a scope manage its members too); a scope the caller cannot see is 404.
 */
export function tenancyService(deps: {
  access: Access;
  tenancy: TenancyRepository;
  users: UsersRepository;
  audit: AuditLog;
}) {
  const { access, tenancy, users, audit } = deps;
  const manageMembersRole: Record<ScopeType, Role> = { org: 'admin', team: 'admin', project: 'owner' };

  /** A role's change in the audit log, in the scope's project or organisation (a team's is its organisation's). */
  async function recordRole(
    principal: Principal,
    type: ScopeType,
    id: string,
    userId: string,
    before: string | null,
    after: string | null,
  ): Promise<void> {
    const scope =
      type === 'project'
        ? { projectId: id }
        : { orgId: type === 'org' ? id : ((await tenancy.get('team', id))?.parent_id ?? null) };
    await audit.record(principal, {
      action: after ? 'role.set' : 'role.removed',
      ...scope,
      target: `user ${userId} on ${NAME[type]} ${id}`,
      before: before && { user_id: userId, scope: type, scope_id: id, role: before },
      after: after && { user_id: userId, scope: type, scope_id: id, role: after },
    });
  }
  const roleOf = async (type: ScopeType, id: string, userId: string) =>
    (await tenancy.members(type, id)).find((m) => m.user_id === userId)?.role ?? null;

  async function toScope(
    principal: Principal,
    type: ScopeType,
    row: { id: string; name: string; parent_id: string | null; created_at: Date },
  ): Promise<Scope> {
    return {
      id: row.id,
      name: row.name,
      parent_id: row.parent_id,
      role: await access.scopeRole(principal, type, row.id),
      created_at: row.created_at.toISOString(),
    };
  }

  return {
    async list(principal: Principal, type: ScopeType, parentId?: string): Promise<Scope[]> {
      const userId = principal.instanceAdmin
        ? null
        : principal.kind === 'session'
          ? principal.id
          : '00000000-0000-0000-0000-00000000ffff';
      const rows = await tenancy.list(type, userId, parentId);
      return Promise.all(rows.map((row) => toScope(principal, type, row)));
    },

    async create(principal: Principal, type: ScopeType, name: string, parentId?: string): Promise<Scope> {
      const parentType = PARENT[type];
      if (parentType) {
        if (!parentId)
          throw badRequest(`invalid request body: parent_id: a ${NAME[type]} needs the id of its ${NAME[parentType]}`);
        await access.requireScopeRole(principal, parentType, parentId, 'admin', `${NAME[parentType]} ${parentId}`);
      } else if (!principal.instanceAdmin) {
        throw forbidden('only instance administrators create organisations');
      }
      const row = await tenancy.create(type, name, parentId ?? null);
      if (principal.kind === 'session' && !parentType) {
        await tenancy.setRole(type, row.id, principal.id, 'admin');
        await recordRole(principal, type, row.id, principal.id, null, 'admin');
      }
      log.info(`${NAME[type]} ${row.id} created by ${principal.name}`);
      return toScope(principal, type, row);
    },

    async remove(principal: Principal, type: ScopeType, id: string): Promise<void> {
      const row = await tenancy.get(type, id);
      if (!row) throw notFound(`${NAME[type]} ${id} not found`);
      const parentType = PARENT[type];
      await access.requireScopeRole(principal, type, id, 'viewer', `${NAME[type]} ${id}`);
      if (parentType)
        await access.requireScopeRole(principal, parentType, row.parent_id!, 'admin', `${NAME[type]} ${id}`);
      else await access.requireScopeRole(principal, type, id, 'admin', `${NAME[type]} ${id}`);
      if (DEFAULTS.has(id)) throw conflict(`the default ${NAME[type]} cannot be deleted`);
      await tenancy.remove(type, id);
      log.info(`${NAME[type]} ${id} deleted by ${principal.name}`);
    },

    async members(principal: Principal, type: ScopeType, id: string) {
      await access.requireScopeRole(principal, type, id, 'viewer', `${NAME[type]} ${id}`);
      return tenancy.members(type, id);
    },

    async setRole(principal: Principal, type: ScopeType, id: string, userId: string, role: Role) {
      await access.requireScopeRole(principal, type, id, manageMembersRole[type], `${NAME[type]} ${id}`);
      // A project owner may manage members, but not make anyone more than an owner: no one grants above their own.
      const own = await access.scopeRole(principal, type, id);
      if (!atLeast(own, role)) throw forbidden(`your role here is ${own}; you cannot grant ${role}, which is above it`);
      if (!(await users.get(userId))) throw notFound(`user ${userId} not found`);
      const before = await roleOf(type, id, userId);
      await tenancy.setRole(type, id, userId, role);
      await recordRole(principal, type, id, userId, before, role);
      log.info(`${NAME[type]} ${id}: user ${userId} is now ${role} (by ${principal.name})`);
      return tenancy.members(type, id);
    },

    async removeMember(principal: Principal, type: ScopeType, id: string, userId: string): Promise<void> {
      await access.requireScopeRole(principal, type, id, manageMembersRole[type], `${NAME[type]} ${id}`);
      const before = await roleOf(type, id, userId);
      if (!(await tenancy.removeMember(type, id, userId)))
        throw notFound(`user ${userId} is not a member of ${NAME[type]} ${id}`);
      await recordRole(principal, type, id, userId, before, null);
    },
  };
}

export type TenancyService = ReturnType<typeof tenancyService>;
