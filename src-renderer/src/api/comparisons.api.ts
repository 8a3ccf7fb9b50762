import { ComparisonSchema, type CompareRequest } from '@contracts/comparisons';
import { RunAcceptedSchema } from '@contracts/runs';
import { api } from './http';

export const comparisonsApi = {
  /** Starts a comparison of a run: its input again on another model or version, acting on nothing. */
  start: (runId: string, body: CompareRequest) =>
    api(`/runs/${runId}/compare`, { method: 'POST', body, schema: RunAcceptedSchema }),
  /** A comparison beside the run it compares. */
  get: (comparisonRunId: string) => api(`/runs/${comparisonRunId}/comparison`, { schema: ComparisonSchema }),
};
