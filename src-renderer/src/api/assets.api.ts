import { AssetSummarySchema } from '@contracts/assets';
import { GraphDefinitionSchema, SavedNodeConfigSchema, type NodeConfig } from '@contracts/runs';
import { z } from 'zod';
import { api } from './http';

const agentPath = (agent: string) => `/agents/${encodeURIComponent(agent)}`;

/** Where phase configuration is read and saved: the project chosen, else the organisation, else the server decides. */
export interface ConfigScope {
  projectId: string | null;
  orgId: string | null;
}
const scopeQuery = ({ projectId, orgId }: ConfigScope) =>
  projectId ? `?project_id=${projectId}` : orgId ? `?org_id=${orgId}` : '';

/** Agents, commands, their graph definitions and per-node configuration. */
export const assetsApi = {
  agents: () => api('/agents', { schema: z.array(AssetSummarySchema) }),
  commands: () => api('/commands', { schema: z.array(AssetSummarySchema) }),
  graph: (agent: string, scope: ConfigScope) =>
    api(`${agentPath(agent)}/graph-definition${scopeQuery(scope)}`, { schema: GraphDefinitionSchema }),
  saveNodeConfig: (agent: string, node: string, config: NodeConfig, scope: ConfigScope) =>
    api(`${agentPath(agent)}/nodes/${encodeURIComponent(node)}/config${scopeQuery(scope)}`, {
      method: 'PUT',
      body: config,
      schema: SavedNodeConfigSchema,
    }),
  /** Removes what is saved on the scope: a project's phase applies its organisation's overrides again. */
  removeNodeConfig: (agent: string, node: string, scope: ConfigScope) =>
    api<void>(`${agentPath(agent)}/nodes/${encodeURIComponent(node)}/config${scopeQuery(scope)}`, {
      method: 'DELETE',
    }),
};
