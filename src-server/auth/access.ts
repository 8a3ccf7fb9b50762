import type { TenancyRepository } from '../db/tenancy.repository';
import type { UsersRepository } from '../db/users.repository';
import { badRequest, forbidden, notFound } from '../contracts/errors';
import { DEFAULT_PROJECT_ID, type Role, type ScopeType } from '../contracts/tenancy';
import { BUILT_IN_PRINCIPALS, type Principal } from './principal';

/**
 * Access rules in one place: every service asks this before it reads or changes tenant data.
 * With authentication disabled every check passes (the caller is the anonymous admin).
 */
export interface Access {
  /** The project runs and threads go to when none is given. Exists from the first start. */
  defaultProjectId(): Promise<string>;
  /** Projects whose threads and runs the caller may read; `null` means every project. */
  visibleProjectIds(principal: Principal): Promise<string[] | null>;
  /**
   * The caller's highest role on each project they hold one on (directly or through its team or organisation), in
   * one query; `null` for instance administrators, who are admin everywhere.
   */
  projectRoles(principal: Principal): Promise<Map<string, Role> | null>;
  /**
   * Throws unless the caller holds at least `role` on the project (directly or through its team or
   * organisation). A caller who cannot even read the project gets 404 (`<what> not found`), never 403,
   * so nothing leaks.
   */
  requireProjectRole(principal: Principal, projectId: string, role: Role, what?: string): Promise<void>;
  /**
   * The project an action works in. The one given is checked at `role`. Without one: the default project for
   * instance administrators; otherwise the caller's only project where they hold `role` or higher. Several such
   * projects answer 400 listing them (id and name, in `details.choices`); none answers 404 when the caller sees no
   * project at all, 403 when they see some but hold `role` on none. Never a project the caller cannot see.
   */
  resolveProject(principal: Principal, projectId: string | undefined, role: Role): Promise<string>;
  /**
   * What an organisation keeps for all its projects (phase configuration, folders, spend): reading it needs a role
   * anywhere inside it (on the organisation, or on one of its teams or projects); `owner` or `admin` needs that role
   * on the organisation itself (403 otherwise).
   */
  requireOrgConfigRole(principal: Principal, orgId: string, role: 'viewer' | 'owner' | 'admin'): Promise<void>;
  /** The organisation a project belongs to: phase configuration is kept per organisation. */
  orgIdOfProject(projectId: string): Promise<string>;
  requireOrgRole(principal: Principal, orgId: string, role: Role, what?: string): Promise<void>;
  /** The caller's role on any scope, inherited from the scopes above it; null when none. */
  scopeRole(principal: Principal, type: ScopeType, id: string): Promise<Role | null>;
  requireScopeRole(principal: Principal, type: ScopeType, id: string, role: Role, what?: string): Promise<void>;
}

const RANK: Record<Role, number> = { admin: 4, owner: 3, member: 2, viewer: 1 };

export function atLeast(role: Role | null, needed: Role): boolean {
  return role !== null && RANK[role] >= RANK[needed];
}

/**
 * The built-in principals are users too: `GET /auth/me` gives their id as the caller's, decisions record it, and the
 * member routes take it. A role given to them changes nothing they may do (they act as admin everywhere).
 */
export function ensureBuiltInPrincipals(users: Pick<UsersRepository, 'ensureBuiltIn'>): Promise<void> {
  return users.ensureBuiltIn(BUILT_IN_PRINCIPALS);
}

function highest(roles: Role[]): Role | null {
  return roles.reduce<Role | null>((best, role) => (best === null || RANK[role] > RANK[best] ? role : best), null);
}

/**
 * Roles come from svc_memberships: a role on an organisation or team applies to everything in it.
 * Instance administrators (the API token, the anonymous user when auth is off) pass every check.
 */
export function createAccess(tenancy: TenancyRepository): Access {
  /** The caller's role on a scope, inherited from above; `exists` false when there is no such scope. */
  const scopeRole = async (
    principal: Principal,
    type: ScopeType,
    id: string,
  ): Promise<{ exists: boolean; role: Role | null }> => {
    const { exists, roles } = await tenancy.rolesOn(principal.kind === 'session' ? principal.id : null, type, id);
    if (!exists) return { exists, role: null };
    return { exists, role: principal.instanceAdmin ? 'admin' : highest(roles as Role[]) };
  };

  const requireScopeRole = async (principal: Principal, type: ScopeType, id: string, role: Role, what: string) => {
    const { exists, role: held } = await scopeRole(principal, type, id);
    if (!exists || held === null) throw notFound(`${what} not found`);
    if (!atLeast(held, role)) throw forbidden(`your role here is ${held}; this needs ${role} or higher`);
  };

  return {
    defaultProjectId: async () => DEFAULT_PROJECT_ID,

    async visibleProjectIds(principal) {
      if (principal.instanceAdmin) return null;
      if (principal.kind !== 'session') return [];
      return (await tenancy.list('project', principal.id)).map((p) => p.id);
    },

    async projectRoles(principal) {
      if (principal.instanceAdmin) return null;
      if (principal.kind !== 'session') return new Map();
      const held = await tenancy.projectRoles(principal.id);
      return new Map(held.map((p) => [p.id, highest(p.roles as Role[])!]));
    },

    scopeRole: async (principal, type, id) => (await scopeRole(principal, type, id)).role,

    requireScopeRole: (principal, type, id, role, what = type === 'org' ? 'organisation' : type) =>
      requireScopeRole(principal, type, id, role, what),

    requireProjectRole: (principal, projectId, role, what = 'project') =>
      requireScopeRole(principal, 'project', projectId, role, what),

    async orgIdOfProject(projectId) {
      const orgId = await tenancy.orgIdOfProject(projectId);
      if (!orgId) throw notFound('project not found');
      return orgId;
    },

    requireOrgRole: (principal, orgId, role, what = 'organisation') =>
      requireScopeRole(principal, 'org', orgId, role, what),

    async resolveProject(principal, projectId, role) {
      if (projectId) {
        await requireScopeRole(principal, 'project', projectId, role, `project ${projectId}`);
        return projectId;
      }
      if (principal.instanceAdmin) return DEFAULT_PROJECT_ID;
      const visible = principal.kind === 'session' ? await tenancy.projectRoles(principal.id) : [];
      if (!visible.length) throw notFound('project not found: you hold no role on any project');
      const eligible = visible.filter((p) => atLeast(highest(p.roles as Role[]), role));
      if (eligible.length === 1) return eligible[0]!.id;
      if (!eligible.length)
        throw forbidden(`you are not ${role} or higher on any project; this needs ${role} or higher`);
      const choices = eligible.map((p) => ({ id: p.id, name: p.name }));
      const listed = choices.slice(0, 20).map((p) => `${p.name} (${p.id})`);
      throw badRequest(
        `you may work in ${choices.length} projects: give project_id, one of ${listed.join(', ')}` +
          (choices.length > listed.length ? `, and ${choices.length - listed.length} more` : ''),
        { choices },
      );
    },

    async requireOrgConfigRole(principal, orgId, role) {
      const { exists, role: held } = await scopeRole(principal, 'org', orgId);
      if (!exists) throw notFound('organisation not found');
      if (atLeast(held, role)) return;
      const inside =
        held !== null || (principal.kind === 'session' && (await tenancy.hasRoleInsideOrg(principal.id, orgId)));
      if (!inside) throw notFound('organisation not found');
      if (role === 'viewer') return;
      throw forbidden(
        held
          ? `your role here is ${held}; this needs ${role} or higher`
          : `your roles are inside the organisation, not on it; this needs ${role} or higher on the organisation`,
      );
    },
  };
}
