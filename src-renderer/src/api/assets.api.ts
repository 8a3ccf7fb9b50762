import type { AssetSummary } from '@contracts/assets';
import type { GraphDefinition, NodeConfig } from '@contracts/runs';
import { api } from './http';

const agentPath = (agent: string) => `/agents/${encodeURIComponent(agent)}`;

/** Agents, commands, their graph definitions and per-node configuration. */
export const assetsApi = {
  agents: () => api<AssetSummary[]>('/agents'),
  commands: () => api<AssetSummary[]>('/commands'),
  graph: (agent: string) => api<GraphDefinition>(`${agentPath(agent)}/graph-definition`),
  saveNodeConfig: (agent: string, node: string, config: NodeConfig) =>
    api<NodeConfig>(`${agentPath(agent)}/nodes/${encodeURIComponent(node)}/config`, { method: 'PUT', body: config }),
};
