import { z } from 'zod';
import { CheckKindSchema, ChecksSchema, CheckSchema, ScoreSchema } from './datasets';

export const ExperimentRequestSchema = z
  .object({
    agent: z.string().trim().min(1).max(100).meta({ description: 'the agent to run every item with' }),
    model: z.string().trim().min(1).max(200).meta({ description: 'the model (`provider:model`)' }),
    agent_version: z.string().trim().min(1).max(100).optional().meta({
      description: "the agent's version (a stored agent's number, a built-in's hash prefix); the current when absent",
    }),
    checks: ChecksSchema.optional().meta({ description: "scored on every item's output, beside the item's own" }),
    name: z.string().trim().min(1).max(200).optional(),
  })
  .meta({ id: 'ExperimentRequest' });
export type ExperimentRequest = z.infer<typeof ExperimentRequestSchema>;

export const ExperimentStatusSchema = z
  .enum(['running', 'completed', 'cancelled'])
  .meta({ description: '`running` until every item has its scores, then `completed`; `cancelled` by a person' });
export type ExperimentStatus = z.infer<typeof ExperimentStatusSchema>;

export const ExperimentItemStatusSchema = z.enum(['pending', 'running', 'scoring', 'done', 'failed']).meta({
  description:
    '`pending`: not started (a few run at a time); `running`: its run goes on; `scoring`: its checks are being ' +
    'scored; `done`: scored; `failed`: its run could not start, or ended in an error (scored all the same when it ' +
    'wrote an output)',
});

/** Spend is shown as a run's is: to the project's owners and admins and to who started the experiment. */
const SPEND = "shown to the project's owners and admins and to who started the experiment, null to others";

/** A median and a 95th percentile, of the items that have the figure. */
const SpreadSchema = z
  .object({ median: z.number().nullable(), p95: z.number().nullable() })
  .meta({ id: 'Spread', description: 'null: no item has the figure yet' });

export const ExperimentItemSchema = z
  .object({
    item_id: z.uuid(),
    position: z.number().int(),
    message: z.string().meta({ description: "the item's input" }),
    status: ExperimentItemStatusSchema,
    run_id: z.uuid().nullable().meta({ description: 'the comparison run that answered it; follow it as any run' }),
    run_status: z.string().nullable().meta({
      description: 'how its run ended: `completed`, `rejected`, `error`, or `stopped` at a gate nobody decided',
    }),
    output: z.string().nullable(),
    input_tokens: z.number().int().nullable().meta({ description: SPEND }),
    output_tokens: z.number().int().nullable().meta({ description: SPEND }),
    cost_usd: z
      .number()
      .nullable()
      .meta({ description: `its run's model calls and its judges', priced; ${SPEND}` }),
    first_token_ms: z.number().nullable(),
    run_ms: z.number().nullable(),
    scores: z.array(ScoreSchema),
    error: z.string().nullable(),
  })
  .meta({ id: 'ExperimentItem' });
export type ExperimentItem = z.infer<typeof ExperimentItemSchema>;

export const CheckTotalSchema = z
  .object({
    check: z.string(),
    kind: CheckKindSchema,
    passed: z.number().int(),
    scored: z.number().int(),
    pass_rate: z.number().nullable().meta({ description: 'passed / scored, 0 to 1; null before any item is scored' }),
  })
  .meta({ id: 'CheckTotal' });

export const ExperimentTotalsSchema = z
  .object({
    checks: z.array(CheckTotalSchema).meta({ description: 'per check, in the order they were first scored' }),
    pass_rate: z.number().nullable().meta({ description: 'scores passed / scores given, over every check and item' }),
    input_tokens: z.number().int().nullable().meta({ description: SPEND }),
    output_tokens: z.number().int().nullable().meta({ description: SPEND }),
    cost_usd: z
      .number()
      .nullable()
      .meta({ description: `${SPEND}; null too when no call had a price` }),
    first_token_ms: SpreadSchema,
    run_ms: SpreadSchema,
  })
  .meta({ id: 'ExperimentTotals' });
export type ExperimentTotals = z.infer<typeof ExperimentTotalsSchema>;

export const ExperimentSummarySchema = z
  .object({
    id: z.uuid(),
    dataset_id: z.uuid(),
    project_id: z.uuid(),
    name: z.string().nullable(),
    agent: z.string(),
    agent_version: z.string(),
    model: z.string(),
    checks: z.array(CheckSchema),
    status: ExperimentStatusSchema,
    progress: z.object({ done: z.number().int(), total: z.number().int() }),
    created_by: z.string(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    totals: ExperimentTotalsSchema,
  })
  .meta({ id: 'ExperimentSummary' });
export type ExperimentSummary = z.infer<typeof ExperimentSummarySchema>;

export const ExperimentSchema = ExperimentSummarySchema.extend({ items: z.array(ExperimentItemSchema) }).meta({
  id: 'Experiment',
});
export type Experiment = z.infer<typeof ExperimentSchema>;

export const ExperimentListSchema = z
  .object({ experiments: z.array(ExperimentSummarySchema) })
  .meta({ id: 'ExperimentList' });

/** Two experiments on one dataset, item by item: what went from pass to fail and back. */
export const ExperimentComparisonSchema = z
  .object({
    base: ExperimentSummarySchema,
    other: ExperimentSummarySchema,
    items: z.array(
      z.object({
        item_id: z.uuid(),
        position: z.number().int(),
        message: z.string(),
        checks: z.array(
          z.object({
            check: z.string(),
            base: z.boolean().nullable().meta({ description: 'pass in the base experiment; null: not scored there' }),
            other: z.boolean().nullable(),
            flip: z.enum(['pass_to_fail', 'fail_to_pass']).nullable(),
          }),
        ),
        flipped: z.boolean().meta({ description: 'some check went from pass to fail or back' }),
      }),
    ),
    flips: z.object({ pass_to_fail: z.number().int(), fail_to_pass: z.number().int() }),
  })
  .meta({ id: 'ExperimentComparison' });
export type ExperimentComparison = z.infer<typeof ExperimentComparisonSchema>;
