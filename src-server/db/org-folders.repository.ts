import { randomUUID } from 'node:crypto';
import type { OrgFolder } from '../contracts/tenancy';
import { withTransaction, type Pool } from './pool';

interface FolderRow {
  id: string;
  org_id: string;
  path: string;
  created_by_name: string;
  created_at: Date;
}

const toFolder = (row: FolderRow): OrgFolder => ({
  id: row.id,
  org_id: row.org_id,
  path: row.path,
  created_by: row.created_by_name,
  created_at: row.created_at.toISOString(),
});

/** Registrations are compared with one another before one is added: one at a time across the cluster. */
const REGISTRATION_LOCK_KEY = 7_305_140;

/** The folders under PROJECT_ROOTS registered to organisations (svc_org_folders). */
export function orgFoldersRepository(pool: Pool) {
  return {
    /** Every registration, of every organisation: what a path check compares a path with. */
    async all(): Promise<OrgFolder[]> {
      const { rows } = await pool.query<FolderRow>('SELECT * FROM svc_org_folders ORDER BY path');
      return rows.map(toFolder);
    },

    async list(orgId: string): Promise<OrgFolder[]> {
      const { rows } = await pool.query<FolderRow>('SELECT * FROM svc_org_folders WHERE org_id = $1 ORDER BY path', [
        orgId,
      ]);
      return rows.map(toFolder);
    },

    /**
     * Registers to the organisation the path `resolve` answers, given every registration (it throws to refuse), under
     * a lock held to the commit, so that two processes cannot register overlapping folders at once.
     */
    async register(
      orgId: string,
      byName: string,
      resolve: (existing: OrgFolder[]) => Promise<string>,
    ): Promise<OrgFolder> {
      return withTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [REGISTRATION_LOCK_KEY]);
        const { rows: existing } = await client.query<FolderRow>('SELECT * FROM svc_org_folders');
        const path = await resolve(existing.map(toFolder));
        const { rows } = await client.query<FolderRow>(
          `INSERT INTO svc_org_folders (id, org_id, path, created_by_name) VALUES ($1, $2, $3, $4) RETURNING *`,
          [randomUUID(), orgId, path, byName],
        );
        return toFolder(rows[0]!);
      });
    },

    /** Removes one of the organisation's registrations; false when it has none of that id. */
    async remove(orgId: string, id: string): Promise<boolean> {
      const result = await pool.query('DELETE FROM svc_org_folders WHERE org_id = $1 AND id = $2', [orgId, id]);
      return (result.rowCount ?? 0) > 0;
    },
  };
}

export type OrgFoldersRepository = ReturnType<typeof orgFoldersRepository>;
