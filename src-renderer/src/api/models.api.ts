import type { Models } from '@contracts/models';
import { api } from './http';

export const modelsApi = {
  list: () => api<Models>('/models'),
};
