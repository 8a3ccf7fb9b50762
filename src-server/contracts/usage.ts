import { z } from 'zod';
import { UuidSchema } from './common';

/** What a model costs, in US dollars per million tokens, as the price table of the configuration says. */
export const ModelPriceSchema = z
  .object({
    input_per_mtok: z.number().nonnegative().meta({ description: 'USD per million prompt tokens' }),
    output_per_mtok: z.number().nonnegative().meta({ description: 'USD per million answer tokens' }),
  })
  .strict()
  .meta({ id: 'ModelPrice' });
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

/**
 * The price table (MODEL_PRICES, MODEL_PRICES_FILE): a model string (`cloud_c:gpt-4.1-mini`, `local:llama3.2`) or a
 * provider (`cloud_c`) → its price. Never fetched from anywhere: what is not in it has no price.
 */
export const ModelPricesSchema = z.record(z.string().trim().min(1), ModelPriceSchema);
export type ModelPrices = z.infer<typeof ModelPricesSchema>;

/** What usage totals can be grouped by: `phase` is the node id, `day` and `hour` the UTC day or hour of the calls. */
export const USAGE_GROUPS = ['run', 'phase', 'agent', 'model', 'project', 'user', 'day', 'hour'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

const GROUP_LIST = new RegExp(`^(${USAGE_GROUPS.join('|')})(,(${USAGE_GROUPS.join('|')}))*$`);

export const UsageQuerySchema = z
  .object({
    from: z.iso
      .datetime({ offset: true })
      .optional()
      .meta({ description: 'ISO 8601: calls made at or after this moment (default: 30 days before `to`)' }),
    to: z.iso
      .datetime({ offset: true })
      .optional()
      .meta({ description: 'ISO 8601: calls made before this moment (default: now)' }),
    group_by: z
      .string()
      .regex(GROUP_LIST, `a comma-separated list of ${USAGE_GROUPS.join(', ')}`)
      .optional()
      .meta({
        description: `comma-separated: ${USAGE_GROUPS.join(', ')}; none gives one row, the total`,
        examples: ['day,model'],
      }),
    project_id: UuidSchema.optional().meta({ description: "only this project's calls" }),
    org_id: UuidSchema.optional().meta({ description: "only the calls of this organisation's projects" }),
  })
  .refine((q) => !(q.project_id && q.org_id), { message: 'give project_id or org_id, not both', path: ['org_id'] })
  .refine((q) => !q.from || !q.to || Date.parse(q.from) < Date.parse(q.to), {
    message: 'from must be before to',
    path: ['from'],
  });
export type UsageQuery = z.infer<typeof UsageQuerySchema>;

/** The figures of a group of model calls. */
export const UsageFiguresSchema = z
  .object({
    runs: z.number().int().meta({ description: 'runs the calls belong to' }),
    calls: z.number().int().meta({ description: 'model calls made (replayed turns are not calls)' }),
    input_tokens: z.number().int().meta({ description: 'prompt tokens, as the runtime or provider counted them' }),
    output_tokens: z.number().int().meta({ description: 'answer tokens, as the runtime or provider counted them' }),
    cost_usd: z.number().nullable().meta({
      description:
        'the known costs added up (each priced when its call was made); null when no call of the group had a price',
    }),
    unpriced_calls: z
      .number()
      .int()
      .meta({ description: 'calls without a known cost (no price configured, or no token count): not in cost_usd' }),
    avg_duration_ms: z.number().nullable().meta({ description: 'mean latency of a call, its slot wait left out' }),
    avg_generation_ms: z
      .number()
      .nullable()
      .meta({ description: 'mean time the local runtime spent writing an answer; null: cloud calls only' }),
    avg_load_ms: z
      .number()
      .nullable()
      .meta({ description: 'mean time the local runtime spent loading the model; null: cloud calls only' }),
    avg_queue_wait_ms: z
      .number()
      .nullable()
      .meta({ description: 'mean wait for a local-runtime slot; null: cloud calls only' }),
  })
  .meta({ id: 'UsageFigures' });
export type UsageFigures = z.infer<typeof UsageFiguresSchema>;

/** One group: its figures, and the value of each key it was grouped by (the others are absent). */
export const UsageRowSchema = UsageFiguresSchema.extend({
  run_id: z.uuid().optional(),
  phase: z.string().optional(),
  agent: z.string().optional(),
  model: z.string().optional(),
  project_id: z.uuid().optional(),
  project_name: z.string().nullable().optional(),
  user_id: z.uuid().nullable().optional().meta({ description: 'who started the run; null for a run without one' }),
  user_name: z.string().nullable().optional(),
  day: z.string().optional().meta({ description: 'YYYY-MM-DD, UTC' }),
  hour: z.string().optional().meta({ description: 'YYYY-MM-DDTHH:00Z: the hour the calls began in, UTC' }),
}).meta({ id: 'UsageRow' });
export type UsageRow = z.infer<typeof UsageRowSchema>;

/** The most groups one answer lists: a range and a grouping that make more are cut, and the answer says so. */
export const MAX_USAGE_ROWS = 5000;

export const UsageReportSchema = z
  .object({
    from: z.string(),
    to: z.string(),
    group_by: z.array(z.enum(USAGE_GROUPS)),
    rows: z.array(UsageRowSchema).meta({ description: 'one per group, in the order of the group keys' }),
    truncated: z.boolean().meta({
      description: `true when there were more than ${MAX_USAGE_ROWS} groups and only the first are listed (the total counts all)`,
    }),
    total: UsageFiguresSchema,
  })
  .meta({
    id: 'UsageReport',
    examples: [
      {
        from: '2026-11-01T00:00:00.000Z',
        to: '2026-12-01T00:00:00.000Z',
        group_by: ['day', 'model'],
        rows: [
          {
            day: '2026-11-26',
            model: 'cloud_c:gpt-4.1-mini',
            runs: 3,
            calls: 9,
            input_tokens: 5400,
            output_tokens: 1200,
            cost_usd: 0.00408,
            unpriced_calls: 0,
            avg_duration_ms: 812,
            avg_generation_ms: null,
            avg_load_ms: null,
            avg_queue_wait_ms: null,
          },
        ],
        truncated: false,
        total: {
          runs: 3,
          calls: 9,
          input_tokens: 5400,
          output_tokens: 1200,
          cost_usd: 0.00408,
          unpriced_calls: 0,
          avg_duration_ms: 812,
          avg_generation_ms: null,
          avg_load_ms: null,
          avg_queue_wait_ms: null,
        },
      },
    ],
  });
export type UsageReport = z.infer<typeof UsageReportSchema>;

/** A run's or a phase's model calls, added up: tokens, cost and time. */
export const CallTotalsSchema = z
  .object({
    calls: z.number().int(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    cost_usd: z.number().nullable().meta({ description: 'the known costs added up; null when no call had a price' }),
    unpriced_calls: z.number().int().meta({ description: 'calls without a known cost, not in cost_usd' }),
    duration_ms: z.number().meta({ description: 'time the calls took, slot waits left out' }),
    generation_ms: z.number().nullable().meta({ description: 'local runtime: time writing answers' }),
    load_ms: z.number().nullable().meta({ description: 'local runtime: time loading the model' }),
    queue_wait_ms: z.number().nullable().meta({ description: 'local runtime: time waiting for a slot' }),
  })
  .meta({ id: 'CallTotals' });
export type CallTotals = z.infer<typeof CallTotalsSchema>;

export const RunUsageSchema = CallTotalsSchema.extend({
  phases: z
    .array(CallTotalsSchema.extend({ phase: z.string() }))
    .meta({ description: 'per phase (node id), in the order the phases first called a model' }),
}).meta({
  id: 'RunUsage',
  description:
    "the run's model calls: shown to the project's owners and admins and to the person who started the run, null to others",
});
export type RunUsage = z.infer<typeof RunUsageSchema>;
