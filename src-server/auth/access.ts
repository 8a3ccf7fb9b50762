import type { Pool } from '../db/pool';
import { forbidden, notFound } from '../http/errors';
import type { Principal } from './principal';

/** Roles per scope, highest first. A role on a scope applies to everything inside it. */
export const ROLES = ['admin', 'owner', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

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
   * Throws unless the caller holds at least `role` on the project (directly or through its team or
   * organisation). A caller who cannot even read the project gets 404 (`<what> not found`), never 403,
   * so nothing leaks.
   */
  requireProjectRole(principal: Principal, projectId: string, role: Role, what?: string): Promise<void>;
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

/** The default tenancy, the same in every installation so two processes never create two. */
export const DEFAULT_ORG_ID = '00000000-0000-4000-8000-000000000001';
export const DEFAULT_TEAM_ID = '00000000-0000-4000-8000-000000000002';
export const DEFAULT_PROJECT_ID = '00000000-0000-4000-8000-000000000003';

export async function ensureDefaultTenancy(pool: Pool): Promise<void> {
  await pool.query(
    `WITH o AS (INSERT INTO svc_orgs (id, name) VALUES ($1, 'Default organisation') ON CONFLICT (id) DO NOTHING),
          t AS (INSERT INTO svc_teams (id, org_id, name) VALUES ($2, $1, 'Default team') ON CONFLICT (id) DO NOTHING)
     INSERT INTO svc_projects (id, team_id, name) VALUES ($3, $2, 'Default project') ON CONFLICT (id) DO NOTHING`,
    [DEFAULT_ORG_ID, DEFAULT_TEAM_ID, DEFAULT_PROJECT_ID],
  );
}

function highest(roles: Role[]): Role | null {
  return roles.reduce<Role | null>((best, role) => (best === null || RANK[role] > RANK[best] ? role : best), null);
}

export type ScopeType = 'org' | 'team' | 'project';

/**
 * Roles come from svc_memberships: a role on an organisation or team applies to everything in it.
 * Instance administrators (the API token, the anonymous user when auth is off) pass every check.
 */
export function createAccess(pool: Pool): Access {
  /** The caller's role on a scope, inherited from above; `exists` false when there is no such scope. */
  const scopeRole = async (principal: Principal, type: ScopeType, id: string): Promise<{ exists: boolean; role: Role | null }> => {
    const { rows } = await pool.query<{ role: Role | null }>(
      `WITH scope AS (
         SELECT o.id AS org, NULL::uuid AS team, NULL::uuid AS project FROM svc_orgs o WHERE $2 = 'org' AND o.id = $3
         UNION ALL SELECT t.org_id, t.id, NULL FROM svc_teams t WHERE $2 = 'team' AND t.id = $3
         UNION ALL SELECT t.org_id, t.id, p.id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE $2 = 'project' AND p.id = $3
       )
       SELECT m.role FROM scope LEFT JOIN svc_memberships m ON m.user_id = $1
          AND ((m.scope_type = 'org' AND m.scope_id = scope.org)
            OR (m.scope_type = 'team' AND m.scope_id = scope.team)
            OR (m.scope_type = 'project' AND m.scope_id = scope.project))`,
      [principal.kind === 'session' ? principal.id : null, type, id],
    );
    if (rows.length === 0) return { exists: false, role: null };
    if (principal.instanceAdmin) return { exists: true, role: 'admin' };
    return { exists: true, role: highest(rows.flatMap((r) => (r.role ? [r.role] : []))) };
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
      const { rows } = await pool.query<{ id: string }>(
        `SELECT DISTINCT p.id FROM svc_projects p
           JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_memberships m ON m.user_id = $1
            AND ((m.scope_type = 'project' AND m.scope_id = p.id)
              OR (m.scope_type = 'team' AND m.scope_id = t.id)
              OR (m.scope_type = 'org' AND m.scope_id = t.org_id))`,
        [principal.id],
      );
      return rows.map((r) => r.id);
    },

    scopeRole: async (principal, type, id) => (await scopeRole(principal, type, id)).role,

    requireScopeRole: (principal, type, id, role, what = type === 'org' ? 'organisation' : type) =>
      requireScopeRole(principal, type, id, role, what),

    requireProjectRole: (principal, projectId, role, what = 'project') => requireScopeRole(principal, 'project', projectId, role, what),

    async orgIdOfProject(projectId) {
      const { rows } = await pool.query<{ org_id: string }>(
        `SELECT t.org_id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE p.id = $1`,
        [projectId],
      );
      if (!rows[0]) throw notFound('project not found');
      return rows[0].org_id;
    },

    requireOrgRole: (principal, orgId, role, what = 'organisation') => requireScopeRole(principal, 'org', orgId, role, what),
  };
}
