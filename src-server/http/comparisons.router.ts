import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import { CompareRequestSchema, ComparisonSchema } from '../contracts/comparisons';
import { runAccepted, RunAcceptedSchema } from '../contracts/runs';
import type { Api } from './api';
import type { AppDeps } from './deps';

/** Comparisons (docs/compare.md): POST /runs/{id}/compare starts one, GET /runs/{id}/comparison reads it. */
export function comparisonRoutes(api: Api, { runsService, comparisons }: AppDeps): void {
  const RunIdParams = z.object({ id: UuidSchema });

  api.route({
    method: 'post',
    path: '/runs/{id}/compare',
    operationId: 'compareRun',
    tag: 'comparisons',
    summary:
      "Run a finished or waiting run's input again, on another model and/or version of its agent, in a thread of its own; it acts on nothing",
    description:
      'The comparison runs with what the run recorded: a tool call the run made with the same arguments gets its ' +
      'recorded answer; another runs only when its tool is read-only and asks nobody, else the model is told it was ' +
      "not run; a publish step never runs; at a gate it takes the run's decision (a gate the run never got past stops " +
      'it for a person). It sends no webhook, Slack message or mail. Follow it as any run, and read it beside the ' +
      'original at GET /runs/{id}/comparison.',
    params: RunIdParams,
    body: CompareRequestSchema,
    idempotent: true,
    errors: {
      400: "invalid request, no such version of the run's agent, or a folder the caller may not use (invalid_request)",
      403: "needs the member role on the run's project (forbidden)",
      409: 'the run is still running or queued (conflict)',
      429: 'the caller has LOCAL_LLM_MAX_RUNS_PER_USER runs on the local runtime already; see Retry-After (too_many_requests)',
    },
    responses: {
      202: {
        description:
          'The comparison started and goes on in the background: follow its events at `stream_url`, read it beside ' +
          'the original at GET /runs/{run_id}/comparison.',
        schema: RunAcceptedSchema,
      },
    },
    handler: async ({ params, body, ctx, req }) =>
      runAccepted(await runsService.compareRun(ctx.principal, params.id, body, req.get('traceparent')), 'running', 0),
  });

  api.route({
    method: 'get',
    path: '/runs/{id}/comparison',
    operationId: 'getComparison',
    tag: 'comparisons',
    summary:
      'A comparison beside the run it compares: each phase’s output and timings, the tool calls and what the comparison did with each, the decisions, tokens, cost, time to first token and run time',
    params: RunIdParams,
    errors: { 404: 'no such run, or it is not a comparison (not_found)' },
    responses: { 200: { description: 'the two runs, original first', schema: ComparisonSchema } },
    handler: ({ params, ctx }) => comparisons.comparison(ctx.principal, params.id),
  });
}
