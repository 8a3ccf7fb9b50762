import { randomUUID } from 'node:crypto';
import type { ScopeType } from '../contracts/tenancy';
import type { Member } from '../contracts/tenancy';
import type { Pool } from './pool';

const TABLE: Record<ScopeType, { table: string; parent: string | null }> = {
  org: { table: 'svc_orgs', parent: null },
  team: { table: 'svc_teams', parent: 'org_id' },
  project: { table: 'svc_projects', parent: 'team_id' },
};

export interface ScopeRow {
  id: string;
  name: string;
  parent_id: string | null;
  created_at: Date;
}

/** Organisations, teams, projects and memberships. Table and column names come from the map above, never from input. */
export function tenancyRepository(pool: Pool) {
  return {
    /** Scopes of a type the user can see: a membership on it, above it, or below it. `userId` null = all. */
    async list(type: ScopeType, userId: string | null, parentId?: string): Promise<ScopeRow[]> {
      const { table, parent } = TABLE[type];
      const visible = {
        org: `x.id IN (SELECT t.org_id FROM svc_teams t JOIN svc_projects p ON p.team_id = t.id
                         JOIN svc_memberships m ON m.user_id = $1 AND ((m.scope_type = 'project' AND m.scope_id = p.id) OR (m.scope_type = 'team' AND m.scope_id = t.id)))
               OR x.id IN (SELECT t.org_id FROM svc_teams t JOIN svc_memberships m ON m.user_id = $1 AND m.scope_type = 'team' AND m.scope_id = t.id)
               OR x.id IN (SELECT scope_id FROM svc_memberships WHERE user_id = $1 AND scope_type = 'org')`,
        team: `x.id IN (SELECT p.team_id FROM svc_projects p JOIN svc_memberships m ON m.user_id = $1 AND m.scope_type = 'project' AND m.scope_id = p.id)
               OR x.id IN (SELECT scope_id FROM svc_memberships WHERE user_id = $1 AND scope_type = 'team')
               OR x.org_id IN (SELECT scope_id FROM svc_memberships WHERE user_id = $1 AND scope_type = 'org')`,
        project: `x.id IN (SELECT scope_id FROM svc_memberships WHERE user_id = $1 AND scope_type = 'project')
               OR x.team_id IN (SELECT scope_id FROM svc_memberships WHERE user_id = $1 AND scope_type = 'team')
               OR x.team_id IN (SELECT t.id FROM svc_teams t JOIN svc_memberships m ON m.user_id = $1 AND m.scope_type = 'org' AND m.scope_id = t.org_id)`,
      }[type];
      const { rows } = await pool.query<ScopeRow>(
        `SELECT x.id, x.name, ${parent ? `x.${parent}` : 'NULL::uuid'} AS parent_id, x.created_at FROM ${table} x
          WHERE ($1::uuid IS NULL OR ${visible})
            AND ($2::uuid IS NULL ${parent ? `OR x.${parent} = $2` : ''})
          ORDER BY x.created_at, x.name`,
        [userId, parentId ?? null],
      );
      return rows;
    },

    async get(type: ScopeType, id: string): Promise<ScopeRow | undefined> {
      const { table, parent } = TABLE[type];
      const { rows } = await pool.query<ScopeRow>(
        `SELECT id, name, ${parent ?? 'NULL::uuid'} AS parent_id, created_at FROM ${table} WHERE id = $1`,
        [id],
      );
      return rows[0];
    },

    async create(type: ScopeType, name: string, parentId: string | null): Promise<ScopeRow> {
      const { table, parent } = TABLE[type];
      const id = randomUUID();
      const { rows } = await pool.query<ScopeRow>(
        parent
          ? `INSERT INTO ${table} (id, name, ${parent}) VALUES ($1, $2, $3) RETURNING id, name, ${parent} AS parent_id, created_at`
          : `INSERT INTO ${table} (id, name) VALUES ($1, $2) RETURNING id, name, NULL::uuid AS parent_id, created_at`,
        parent ? [id, name, parentId] : [id, name],
      );
      return rows[0]!;
    },

    async remove(type: ScopeType, id: string): Promise<void> {
      await pool.query(`DELETE FROM ${TABLE[type].table} WHERE id = $1`, [id]);
      await pool.query(`DELETE FROM svc_memberships WHERE scope_type = $1 AND scope_id = $2`, [type, id]);
    },

    /** The user's roles on a scope and on the scopes above it; `exists` false when there is no such scope. */
    async rolesOn(userId: string | null, type: ScopeType, id: string): Promise<{ exists: boolean; roles: string[] }> {
      const { rows } = await pool.query<{ role: string | null }>(
        `WITH scope AS (
           SELECT o.id AS org, NULL::uuid AS team, NULL::uuid AS project FROM svc_orgs o WHERE $2 = 'org' AND o.id = $3
           UNION ALL SELECT t.org_id, t.id, NULL FROM svc_teams t WHERE $2 = 'team' AND t.id = $3
           UNION ALL SELECT t.org_id, t.id, p.id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE $2 = 'project' AND p.id = $3
         )
         SELECT m.role FROM scope LEFT JOIN svc_memberships m ON m.user_id = $1
            AND ((m.scope_type = 'org' AND m.scope_id = scope.org)
              OR (m.scope_type = 'team' AND m.scope_id = scope.team)
              OR (m.scope_type = 'project' AND m.scope_id = scope.project))`,
        [userId, type, id],
      );
      return { exists: rows.length > 0, roles: rows.flatMap((r) => (r.role ? [r.role] : [])) };
    },

    /** The projects the user holds a role on (directly, or on their team or organisation), with those roles. */
    async projectRoles(userId: string): Promise<{ id: string; name: string; roles: string[] }[]> {
      const { rows } = await pool.query<{ id: string; name: string; roles: string[] }>(
        `SELECT p.id, p.name, array_agg(m.role) AS roles
           FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_memberships m ON m.user_id = $1
            AND ((m.scope_type = 'project' AND m.scope_id = p.id)
              OR (m.scope_type = 'team' AND m.scope_id = t.id)
              OR (m.scope_type = 'org' AND m.scope_id = t.org_id))
          GROUP BY p.id, p.name, p.created_at
          ORDER BY p.created_at, p.name`,
        [userId],
      );
      return rows;
    },

    /** Whether the user holds any role on the organisation or on a team or project inside it. */
    async hasRoleInsideOrg(userId: string, orgId: string): Promise<boolean> {
      const { rows } = await pool.query(
        `SELECT 1 FROM svc_memberships m
          WHERE m.user_id = $1
            AND ((m.scope_type = 'org' AND m.scope_id = $2)
              OR (m.scope_type = 'team' AND m.scope_id IN (SELECT id FROM svc_teams WHERE org_id = $2))
              OR (m.scope_type = 'project' AND m.scope_id IN (
                    SELECT p.id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE t.org_id = $2)))
          LIMIT 1`,
        [userId, orgId],
      );
      return rows.length > 0;
    },

    async orgIdOfProject(projectId: string): Promise<string | undefined> {
      const { rows } = await pool.query<{ org_id: string }>(
        `SELECT t.org_id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE p.id = $1`,
        [projectId],
      );
      return rows[0]?.org_id;
    },

    async members(type: ScopeType, id: string): Promise<Member[]> {
      const { rows } = await pool.query<Member>(
        `SELECT u.id AS user_id, u.name, u.email, m.role FROM svc_memberships m JOIN svc_users u ON u.id = m.user_id
          WHERE m.scope_type = $1 AND m.scope_id = $2 ORDER BY u.name, u.email`,
        [type, id],
      );
      return rows;
    },

    async setRole(type: ScopeType, id: string, userId: string, role: string): Promise<void> {
      await pool.query(
        `INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, scope_type, scope_id) DO UPDATE SET role = EXCLUDED.role`,
        [userId, type, id, role],
      );
    },

    async removeMember(type: ScopeType, id: string, userId: string): Promise<boolean> {
      const result = await pool.query(
        `DELETE FROM svc_memberships WHERE scope_type = $1 AND scope_id = $2 AND user_id = $3`,
        [type, id, userId],
      );
      return (result.rowCount ?? 0) > 0;
    },
  };
}

export type TenancyRepository = ReturnType<typeof tenancyRepository>;
