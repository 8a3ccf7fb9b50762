import type { QueueStatus } from '@contracts/models';
import { api } from './http';

export const queueApi = {
  status: () => api<QueueStatus>('/queue/status'),
  reset: (reason: string) => api<QueueStatus>('/queue/reset', { method: 'POST', body: { reason } }),
};
