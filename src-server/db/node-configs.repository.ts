import type { RoutingRule } from '../contracts/assets';
import type { NodeConfig } from '../contracts/runs';
import type { Pool } from './pool';

interface NodeConfigRow {
  node_id: string;
  instructions_override: string | null;
  classification_labels: string | null;
  routing_overrides: RoutingRule[];
  notes: string | null;
}

const toConfig = ({ node_id: _node, ...config }: NodeConfigRow): NodeConfig => config;

/** Per-organisation overrides of an agent's phases. */
export function nodeConfigsRepository(pool: Pool) {
  return {
    async forAgent(orgId: string, agent: string): Promise<Map<string, NodeConfig>> {
      const { rows } = await pool.query<NodeConfigRow>(
        `SELECT node_id, instructions_override, classification_labels, routing_overrides, notes
           FROM svc_node_configs WHERE org_id = $1 AND agent = $2`,
        [orgId, agent],
      );
      return new Map(rows.map((row) => [row.node_id, toConfig(row)]));
    },

    /** The overrides a run applies: those of the organisation its project belongs to, in one round trip. */
    async forProject(projectId: string, agent: string): Promise<Map<string, NodeConfig>> {
      const { rows } = await pool.query<NodeConfigRow>(
        `SELECT c.node_id, c.instructions_override, c.classification_labels, c.routing_overrides, c.notes
           FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_node_configs c ON c.org_id = t.org_id AND c.agent = $2
          WHERE p.id = $1`,
        [projectId, agent],
      );
      return new Map(rows.map((row) => [row.node_id, toConfig(row)]));
    },

    async save(orgId: string, agent: string, nodeId: string, config: NodeConfig): Promise<void> {
      await pool.query(
        `INSERT INTO svc_node_configs (org_id, agent, node_id, instructions_override, classification_labels, routing_overrides, notes, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now())
         ON CONFLICT (org_id, agent, node_id) DO UPDATE
           SET instructions_override = EXCLUDED.instructions_override,
               classification_labels = EXCLUDED.classification_labels,
               routing_overrides = EXCLUDED.routing_overrides,
               notes = EXCLUDED.notes,
               updated_at = now()`,
        [
          orgId,
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
