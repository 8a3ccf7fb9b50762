import type { AssetSummary } from '@contracts/assets';
import type { Health } from '@contracts/health';
import type { Models, QueueStatus } from '@contracts/models';
import type { GraphDefinition, NodeConfig, Run, RunAccepted, RunDetail, ThreadPage } from '@contracts/runs';
import { api } from './http';

/** One small function per endpoint; stores call these, never fetch directly. */
export const healthApi = { get: () => api<Health>('/health') };

export const modelsApi = { list: () => api<Models>('/models') };

export const queueApi = {
  status: () => api<QueueStatus>('/queue/status'),
  reset: (reason: string) => api<QueueStatus>('/queue/reset', { method: 'POST', body: { reason } }),
};

export const assetsApi = {
  agents: () => api<AssetSummary[]>('/agents'),
  commands: () => api<AssetSummary[]>('/commands'),
  graph: (name: string) => api<GraphDefinition>(`/agents/${encodeURIComponent(name)}/graph-definition`),
  saveConfig: (agent: string, node: string, config: NodeConfig) =>
    api<NodeConfig>(`/agents/${encodeURIComponent(agent)}/nodes/${encodeURIComponent(node)}/config`, { method: 'PUT', body: config }),
};

export const threadsApi = {
  list: (limit = 50) => api<ThreadPage>(`/threads?limit=${limit}`),
  runs: (threadId: string) => api<Run[]>(`/threads/${threadId}/runs`),
  remove: (threadId: string) => api<void>(`/threads/${threadId}`, { method: 'DELETE' }),
};

export const runsApi = {
  detail: (runId: string) => api<RunDetail>(`/runs/${runId}`),
  cancel: (runId: string, reason: string) => api<RunAccepted>(`/runs/${runId}/cancel`, { method: 'POST', body: { reason } }),
};

