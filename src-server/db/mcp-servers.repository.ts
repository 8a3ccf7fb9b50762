import type { McpServer } from '../contracts/tools';
import type { Pool } from './pool';

/** A server of the registry, with who registered its current declaration and when. */
export interface McpServerEntry {
  server: McpServer;
  registeredBy: { id: string; name: string | null } | null;
  registeredAt: string;
}

interface ServerRow {
  name: string;
  server: McpServer;
  created_by: string | null;
  created_by_name: string | null;
  created_at: Date;
}

/** The row's declaration under the name it is registered by (the key, whatever the stored JSON says). */
const serverOf = (row: Pick<ServerRow, 'name' | 'server'>): McpServer => ({ ...row.server, name: row.name });

const toEntry = (row: ServerRow): McpServerEntry => ({
  server: serverOf(row),
  registeredBy: row.created_by === null ? null : { id: row.created_by, name: row.created_by_name },
  registeredAt: row.created_at.toISOString(),
});

/** The instance's registry of MCP servers, which stored agents name (svc_mcp_servers). */
export function mcpServersRepository(pool: Pool) {
  return {
    /** Every registered server by its name: what a stored agent's `registry: <name>` is compiled against. */
    async all(): Promise<Map<string, McpServer>> {
      const { rows } = await pool.query<ServerRow>('SELECT name, server FROM svc_mcp_servers');
      return new Map(rows.map((row) => [row.name, serverOf(row)]));
    },

    async list(): Promise<McpServerEntry[]> {
      const { rows } = await pool.query<ServerRow>(
        `SELECT s.name, s.server, s.created_by, u.name AS created_by_name, s.created_at
           FROM svc_mcp_servers s LEFT JOIN svc_users u ON u.id = s.created_by
          ORDER BY s.name`,
      );
      return rows.map(toEntry);
    },

    /** Registers a server under its name, or replaces the declaration registered under it, as `userId`'s. */
    async put(server: McpServer, userId: string): Promise<McpServerEntry> {
      const { rows } = await pool.query<ServerRow>(
        `WITH saved AS (
           INSERT INTO svc_mcp_servers (name, server, created_by) VALUES ($1, $2::jsonb, $3)
           ON CONFLICT (name) DO UPDATE SET server = EXCLUDED.server, created_by = EXCLUDED.created_by,
                                            created_at = now()
           RETURNING name, server, created_by, created_at)
         SELECT s.*, u.name AS created_by_name FROM saved s LEFT JOIN svc_users u ON u.id = s.created_by`,
        [server.name, JSON.stringify(server), userId],
      );
      return toEntry(rows[0]!);
    },

    /** Removes a registered server; false when none is registered under the name. */
    async remove(name: string): Promise<boolean> {
      const result = await pool.query('DELETE FROM svc_mcp_servers WHERE name = $1', [name]);
      return (result.rowCount ?? 0) > 0;
    },
  };
}

export type McpServersRepository = ReturnType<typeof mcpServersRepository>;
