import type { Pool } from './pool';

import type { OwnedScope } from '../contracts/tenancy';

export interface SecretRow {
  scope_type: 'org' | 'project';
  scope_id: string;
  name: string;
  sealed: string;
  set_by_name: string | null;
  set_at: Date;
}

/** Project and organisation secrets (svc_secrets), sealed by the service's SecretBox before they get here. */
export function secretsRepository(pool: Pool) {
  return {
    /** Sets a secret; answers whether it replaced one. */
    async put(
      scope: OwnedScope,
      name: string,
      sealed: string,
      by: { id: string; name: string },
    ): Promise<{ replaced: boolean; row: SecretRow }> {
      const { rows } = await pool.query<SecretRow & { replaced: boolean }>(
        `INSERT INTO svc_secrets (scope_type, scope_id, name, sealed, set_by, set_by_name)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (scope_type, scope_id, name) DO UPDATE
           SET sealed = EXCLUDED.sealed, set_by = EXCLUDED.set_by, set_by_name = EXCLUDED.set_by_name, set_at = now()
         RETURNING scope_type, scope_id, name, sealed, set_by_name, set_at, (xmax <> 0) AS replaced`,
        [scope.type, scope.id, name, sealed, by.id, by.name],
      );
      const { replaced, ...row } = rows[0]!;
      return { replaced, row };
    },

    async list(scope: OwnedScope): Promise<SecretRow[]> {
      const { rows } = await pool.query<SecretRow>(
        `SELECT scope_type, scope_id, name, sealed, set_by_name, set_at FROM svc_secrets
          WHERE scope_type = $1 AND scope_id = $2 ORDER BY name`,
        [scope.type, scope.id],
      );
      return rows;
    },

    async remove(scope: OwnedScope, name: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `DELETE FROM svc_secrets WHERE scope_type = $1 AND scope_id = $2 AND name = $3`,
        [scope.type, scope.id, name],
      );
      return (rowCount ?? 0) > 0;
    },

    /**
     * The sealed values of `names` a run of the project may use: its project's, then its organisation's (the project's
     * wins when both have one), in one query.
     */
    async forProject(projectId: string, names: readonly string[]): Promise<Map<string, string>> {
      if (names.length === 0) return new Map();
      const { rows } = await pool.query<{ name: string; sealed: string }>(
        `SELECT DISTINCT ON (s.name) s.name, s.sealed
           FROM svc_secrets s
           JOIN svc_projects p ON p.id = $1
           JOIN svc_teams t ON t.id = p.team_id
          WHERE s.name = ANY($2)
            AND ((s.scope_type = 'project' AND s.scope_id = p.id) OR (s.scope_type = 'org' AND s.scope_id = t.org_id))
          ORDER BY s.name, (s.scope_type = 'project') DESC`,
        [projectId, names],
      );
      return new Map(rows.map((r) => [r.name, r.sealed]));
    },
  };
}

export type SecretsRepository = ReturnType<typeof secretsRepository>;
