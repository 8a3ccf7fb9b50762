import type { AssetSummary } from '@contracts/assets';
import type { GraphDefinition, NodeConfig } from '@contracts/runs';
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
  agents: () => api<AssetSummary[]>('/agents'),
  commands: () => api<AssetSummary[]>('/commands'),
  graph: (agent: string, scope: ConfigScope) =>
    api<GraphDefinition>(`${agentPath(agent)}/graph-definition${scopeQuery(scope)}`),
  saveNodeConfig: (agent: string, node: string, config: NodeConfig, scope: ConfigScope) =>
    api<NodeConfig>(`${agentPath(agent)}/nodes/${encodeURIComponent(node)}/config${scopeQuery(scope)}`, {
      method: 'PUT',
      body: config,
    }),
};
