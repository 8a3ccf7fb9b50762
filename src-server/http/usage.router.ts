import { UsageQuerySchema, UsageReportSchema } from '../contracts/usage';
import type { Api } from './api';
import type { AppDeps } from './deps';

/** GET /usage: the usage accounting's totals (docs/observability.md#accounting). */
export function usageRoutes(api: Api, { usage }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/usage',
    operationId: 'getUsage',
    tag: 'usage',
    summary:
      "Model calls' tokens, cost and latency over a time range, grouped by run, phase, agent, model, project, user or day: every call of the projects the caller owns, her own in the others",
    query: UsageQuerySchema,
    errors: { 404: 'the project or organisation named is not visible to the caller (not_found)' },
    responses: { 200: { description: 'the totals, per group and in all', schema: UsageReportSchema } },
    handler: ({ query, ctx }) => usage.report(ctx.principal, query),
  });
}
