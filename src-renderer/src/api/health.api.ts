import { HealthSchema } from '@contracts/health';
import { api } from './http';

export const healthApi = {
  get: () => api('/health', { schema: HealthSchema }),
};
