import {
  DatasetDetailSchema,
  DatasetItemSchema,
  DatasetListSchema,
  DatasetSchema,
  type DatasetItemPatch,
  type NewDataset,
  type NewDatasetItem,
} from '@contracts/datasets';
import { api } from './http';

const one = (id: string) => `/datasets/${encodeURIComponent(id)}`;
const item = (datasetId: string, itemId: string) => `${one(datasetId)}/items/${encodeURIComponent(itemId)}`;

/** A project's datasets and their items: inputs with what their output should be, to run experiments on. */
export const datasetsApi = {
  list: (projectId: string) =>
    api(`/projects/${encodeURIComponent(projectId)}/datasets`, { schema: DatasetListSchema }),
  create: (projectId: string, body: NewDataset) =>
    api(`/projects/${encodeURIComponent(projectId)}/datasets`, { method: 'POST', body, schema: DatasetSchema }),
  get: (id: string) => api(one(id), { schema: DatasetDetailSchema }),
  remove: (id: string) => api<void>(one(id), { method: 'DELETE' }),
  /** An item copied from a run (`{run_id}`), or typed by hand (`{message, …}`). */
  addItem: (id: string, body: NewDatasetItem) =>
    api(`${one(id)}/items`, { method: 'POST', body, schema: DatasetItemSchema }),
  updateItem: (id: string, itemId: string, body: DatasetItemPatch) =>
    api(item(id, itemId), { method: 'PATCH', body, schema: DatasetItemSchema }),
  removeItem: (id: string, itemId: string) => api<void>(item(id, itemId), { method: 'DELETE' }),
};
