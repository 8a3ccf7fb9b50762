import { ModelsSchema } from '@contracts/models';
import { api } from './http';

export const modelsApi = {
  list: () => api('/models', { schema: ModelsSchema }),
};
