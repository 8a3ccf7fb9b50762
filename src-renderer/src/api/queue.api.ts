import { QueueStatusSchema } from '@contracts/models';
import { api } from './http';

export const queueApi = {
  status: () => api('/queue/status', { schema: QueueStatusSchema }),
  reset: (reason: string) => api('/queue/reset', { method: 'POST', body: { reason }, schema: QueueStatusSchema }),
};
