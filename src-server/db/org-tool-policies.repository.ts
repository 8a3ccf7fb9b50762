import type { OrgToolPolicies, ToolPolicy } from '../contracts/tools';
import type { Pool } from './pool';

interface PoliciesRow {
  policies: ToolPolicy[];
  updated_by: string | null;
  updated_by_name: string | null;
  updated_at: Date;
}

/** The tool policies of each organisation: a floor no agent of it loosens (svc_org_tool_policies). */
export function orgToolPoliciesRepository(pool: Pool) {
  return {
    /** The organisation's policies, with who set them and when; none, and nulls, when they were never set. */
    async get(orgId: string): Promise<OrgToolPolicies> {
      const { rows } = await pool.query<PoliciesRow>(
        `SELECT f.policies, f.updated_by, u.name AS updated_by_name, f.updated_at
           FROM svc_org_tool_policies f LEFT JOIN svc_users u ON u.id = f.updated_by
          WHERE f.org_id = $1`,
        [orgId],
      );
      const row = rows[0];
      if (!row) return { org_id: orgId, policies: [], updated_by: null, updated_at: null };
      return {
        org_id: orgId,
        policies: row.policies,
        updated_by: row.updated_by === null ? null : { id: row.updated_by, name: row.updated_by_name },
        updated_at: row.updated_at.toISOString(),
      };
    },

    /** Replaces the organisation's policies as a whole. */
    async save(orgId: string, policies: readonly ToolPolicy[], userId: string): Promise<void> {
      await pool.query(
        `INSERT INTO svc_org_tool_policies (org_id, policies, updated_by) VALUES ($1, $2::jsonb, $3)
         ON CONFLICT (org_id) DO UPDATE SET policies = EXCLUDED.policies, updated_by = EXCLUDED.updated_by,
                                            updated_at = now()`,
        [orgId, JSON.stringify(policies), userId],
      );
    },

    /** The policies of the organisation a project belongs to; none when it set none. */
    async ofProject(projectId: string): Promise<ToolPolicy[]> {
      const { rows } = await pool.query<{ policies: ToolPolicy[] }>(
        `SELECT f.policies
           FROM svc_projects p
           JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_org_tool_policies f ON f.org_id = t.org_id
          WHERE p.id = $1`,
        [projectId],
      );
      return rows[0]?.policies ?? [];
    },
  };
}

export type OrgToolPoliciesRepository = ReturnType<typeof orgToolPoliciesRepository>;
