import { LocalModelsSchema, ModelNameBodySchema, ModelPullSchema, ModelsSchema } from '@contracts/models';
import { api } from './http';

export const modelsApi = {
  list: () => api('/models', { schema: ModelsSchema }),
  local: () => api('/models/local', { schema: LocalModelsSchema }),
  pull: (name: string) => api('/models/local/pulls', { method: 'POST', body: { name }, schema: ModelPullSchema }),
  cancelPull: (id: string) =>
    api(`/models/local/pulls/${encodeURIComponent(id)}/cancel`, { method: 'POST', body: {}, schema: ModelPullSchema }),
  remove: (model: string) => api<void>('/models/local/delete', { method: 'POST', body: { model } }),
  setDefault: (model: string) =>
    api('/models/default', { method: 'PUT', body: { model }, schema: ModelNameBodySchema }),
};
