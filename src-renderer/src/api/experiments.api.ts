import {
  ExperimentComparisonSchema,
  ExperimentListSchema,
  ExperimentSchema,
  ExperimentSummarySchema,
  type ExperimentRequest,
} from '@contracts/experiments';
import { api } from './http';

const one = (id: string) => `/experiments/${encodeURIComponent(id)}`;

/** Experiments: a dataset's every item run with one agent and model, its outputs scored by checks. */
export const experimentsApi = {
  /** Starts one; it answers at once (202), `running`, and goes on in the server. */
  start: (datasetId: string, body: ExperimentRequest) =>
    api(`/datasets/${encodeURIComponent(datasetId)}/experiments`, {
      method: 'POST',
      body,
      schema: ExperimentSummarySchema,
    }),
  /** A dataset's experiments, newest first. */
  list: (datasetId: string) =>
    api(`/datasets/${encodeURIComponent(datasetId)}/experiments`, { schema: ExperimentListSchema }),
  get: (id: string) => api(one(id), { schema: ExperimentSchema }),
  /** Cancels a running one: the items not yet scored fail, their runs stop. */
  cancel: (id: string) => api(`${one(id)}/cancel`, { method: 'POST', schema: ExperimentSchema }),
  /** Two experiments of one dataset item by item: what went from pass to fail and back. */
  compare: (baseId: string, otherId: string) =>
    api(`${one(baseId)}/comparison/${encodeURIComponent(otherId)}`, { schema: ExperimentComparisonSchema }),
};
