import { UsageReportSchema, type UsageGroup } from '@contracts/usage';
import { api } from './http';

export const usageApi = {
  /** The caller's visible model calls between `from` and `to`, added up per group (GET /usage). */
  report: (from: Date, to: Date, groupBy: UsageGroup[]) => {
    const query = new URLSearchParams({ from: from.toISOString(), to: to.toISOString() });
    if (groupBy.length) query.set('group_by', groupBy.join(','));
    return api(`/usage?${query}`, { schema: UsageReportSchema });
  },
};
