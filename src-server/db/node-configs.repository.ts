import type { RoutingRule } from '../contracts/assets';
import type { NodeConfig } from '../contracts/runs';
import type { Pool } from './pool';
import { prepared } from './prepared';

interface NodeConfigRow {
  node_id: string;
  instructions_override: string | null;
  classification_labels: string | null;
  routing_overrides: RoutingRule[];
  notes: string | null;
}

/** Where overrides are kept: an organisation's apply to all its projects, a project's own ones over them. */
export type ConfigScope = { type: 'org' | 'project'; id: string };
export type ConfigSource = 'project' | 'organisation';

const TABLE = {
  org: { table: 'svc_node_configs', key: 'org_id' },
  project: { table: 'svc_project_node_configs', key: 'project_id' },
} as const;

const COLUMNS = 'node_id, instructions_override, classification_labels, routing_overrides, notes';

const toConfig = ({ node_id: _node, ...config }: NodeConfigRow): NodeConfig => config;

/** Overrides of an agent's phases, per organisation and per project. Table names come from the map above. */
export function nodeConfigsRepository(pool: Pool) {
  return {
    /** The records saved on one scope itself (nothing inherited). */
    async forAgent(scope: ConfigScope, agent: string): Promise<Map<string, NodeConfig>> {
      const { table, key } = TABLE[scope.type];
      const { rows } = await pool.query<NodeConfigRow>(
        `SELECT ${COLUMNS} FROM ${table} WHERE ${key} = $1 AND agent = $2`,
        [scope.id, agent],
      );
      return new Map(rows.map((row) => [row.node_id, toConfig(row)]));
    },

    /**
     * The overrides a run of the project applies, per node: the project's own record when it has one, else its
     * organisation's; with where each came from. One round trip.
     */
    async effective(
      projectId: string,
      agent: string,
    ): Promise<Map<string, { config: NodeConfig; from: ConfigSource }>> {
      const { rows } = await pool.query<NodeConfigRow & { source: ConfigSource }>(
        prepared(`SELECT ${COLUMNS}, 'project' AS source FROM svc_project_node_configs WHERE project_id = $1 AND agent = $2
         UNION ALL
         SELECT c.node_id, c.instructions_override, c.classification_labels, c.routing_overrides, c.notes, 'organisation'
           FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_node_configs c ON c.org_id = t.org_id AND c.agent = $2
          WHERE p.id = $1
            AND NOT EXISTS (SELECT 1 FROM svc_project_node_configs o
                             WHERE o.project_id = $1 AND o.agent = $2 AND o.node_id = c.node_id)`),
        [projectId, agent],
      );
      return new Map(rows.map(({ source, ...row }) => [row.node_id, { config: toConfig(row), from: source }]));
    },

    /** Removes the record saved on the scope; false when there was none. */
    async remove(scope: ConfigScope, agent: string, nodeId: string): Promise<boolean> {
      const { table, key } = TABLE[scope.type];
      const result = await pool.query(`DELETE FROM ${table} WHERE ${key} = $1 AND agent = $2 AND node_id = $3`, [
        scope.id,
        agent,
        nodeId,
      ]);
      return (result.rowCount ?? 0) > 0;
    },

    async save(scope: ConfigScope, agent: string, nodeId: string, config: NodeConfig): Promise<void> {
      const { table, key } = TABLE[scope.type];
      await pool.query(
        `INSERT INTO ${table} (${key}, agent, node_id, instructions_override, classification_labels, routing_overrides, notes, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now())
         ON CONFLICT (${key}, agent, node_id) DO UPDATE
           SET instructions_override = EXCLUDED.instructions_override,
               classification_labels = EXCLUDED.classification_labels,
               routing_overrides = EXCLUDED.routing_overrides,
               notes = EXCLUDED.notes,
               updated_at = now()`,
        [
          scope.id,
          agent,
          nodeId,
          config.instructions_override,
          config.classification_labels,
          JSON.stringify(config.routing_overrides),
          config.notes,
        ],
      );
    },
  };
}

export type NodeConfigsRepository = ReturnType<typeof nodeConfigsRepository>;
