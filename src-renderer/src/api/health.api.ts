import type { Health } from '@contracts/health';
import { api } from './http';

export const healthApi = {
  get: () => api<Health>('/health'),
};
