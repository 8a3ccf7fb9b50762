import { z } from 'zod';
import { UuidSchema } from './common';

export const BUDGET_PERIODS = ['day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** Where a budget's warning level sits when none is given: 80% of the limit. */
export const DEFAULT_WARN_AT = 0.8;

/**
 * A budget as it is set (PUT /projects/{id}/budget, PUT /orgs/{id}/budget): one per scope, period and user. Money
 * counts priced models' calls; tokens (input plus output) count every model's, local ones included.
 */
export const SetBudgetSchema = z
  .object({
    period: z.enum(BUDGET_PERIODS).meta({ description: 'the UTC (or `time_zone`) day, or calendar month' }),
    amount_usd: z.number().positive().max(1e9).optional().meta({ description: 'the limit in US dollars' }),
    tokens: z.number().int().positive().max(1e15).optional().meta({ description: 'the limit in tokens' }),
    warn_at: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .meta({ description: `the fraction of the limit at which the warning is sent (default ${DEFAULT_WARN_AT})` }),
    user_id: UuidSchema.optional().meta({
      description: "a budget of one person's runs within the scope; absent: everyone's runs together",
    }),
    time_zone: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .optional()
      .meta({ description: 'an IANA time zone name where the day or month starts (default UTC)' }),
  })
  .strict()
  .refine((b) => b.amount_usd !== undefined || b.tokens !== undefined, {
    message: 'give amount_usd, tokens, or both',
    path: ['amount_usd'],
  })
  .meta({ id: 'SetBudget' });
export type SetBudget = z.infer<typeof SetBudgetSchema>;

export const BUDGET_STATUSES = ['ok', 'warning', 'exceeded'] as const;

export const BudgetSchema = z
  .object({
    id: z.uuid(),
    scope: z.object({ type: z.enum(['org', 'project']), id: z.uuid() }),
    user_id: z.uuid().nullable(),
    period: z.enum(BUDGET_PERIODS),
    amount_usd: z.number().nullable(),
    tokens: z.number().int().nullable(),
    warn_at: z.number(),
    time_zone: z.string(),
    set_at: z.string(),
    period_start: z.string().meta({ description: 'when the current period began' }),
    period_end: z.string().meta({ description: 'when it ends and the spend starts again from zero' }),
    spent_usd: z.number().meta({ description: "the current period's cost of priced calls, before it was set too" }),
    spent_tokens: z.number().int().meta({ description: "the current period's input and output tokens" }),
    status: z.enum(BUDGET_STATUSES).meta({
      description: 'warning: at or past `warn_at` of a limit; exceeded: a limit reached, new runs are refused',
    }),
  })
  .meta({ id: 'Budget' });
export type Budget = z.infer<typeof BudgetSchema>;

export const BudgetListSchema = z.object({ budgets: z.array(BudgetSchema) }).meta({ id: 'BudgetList' });

/** The words a refusal and a stopped run use: `BudgetExceeded: <budget> …` names the budget and its figures. */
export function budgetLabel(budget: Pick<Budget, 'scope' | 'period' | 'user_id'>, scopeName: string): string {
  const whose = budget.user_id === null ? '' : ` for user ${budget.user_id}`;
  return `the ${budget.period === 'day' ? 'daily' : 'monthly'} budget of ${budget.scope.type} "${scopeName}"${whose}`;
}
