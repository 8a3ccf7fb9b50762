import { z } from 'zod';
import { BudgetListSchema, BudgetSchema, SetBudgetSchema } from '../contracts/budgets';
import { UuidSchema } from '../contracts/common';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });
const OWNER = 'needs the owner or admin role on the scope (forbidden)';
const HOW =
  'One budget per period (and per user, when `user_id` is given): setting it again replaces it. The current period ' +
  'counts everything spent in it, also before the budget was set. Money counts priced models; tokens (input plus ' +
  'output) every model, local ones included. At `warn_at` a `budget.warning` webhook event is sent and a ' +
  '`budget_warning` event goes on the stream of the run that reached it, once per period; once a limit is reached new ' +
  'runs are refused (429 `budget_exceeded`) and running runs stop after their current model call with ' +
  '`BudgetExceeded: …`.';

/** Spend limits per project and organisation (docs/operations.md#budgets). */
export function budgetRoutes(api: Api, { budgets }: Pick<AppDeps, 'budgets'>): void {
  const tag = 'budgets';
  for (const scope of ['project', 'org'] as const) {
    const base = scope === 'project' ? '/projects/{id}' : '/orgs/{id}';
    const suffix = scope === 'project' ? '' : 'Org';
    const whose = scope === 'project' ? "a project's" : "an organisation's";

    api.route({
      method: 'put',
      path: `${base}/budget`,
      operationId: `set${suffix}Budget`,
      tag,
      summary: `Set ${whose} daily or monthly budget, in money and/or tokens`,
      description: HOW,
      params: IdParams,
      body: SetBudgetSchema,
      errors: { 403: OWNER },
      responses: { 200: { description: 'the budget with its current spend', schema: BudgetSchema } },
      handler: ({ params, body, ctx }) => budgets.set(ctx.principal, { type: scope, id: params.id }, body),
    });

    api.route({
      method: 'get',
      path: `${base}/budgets`,
      operationId: `list${suffix}Budgets`,
      tag,
      summary: `${whose[0]!.toUpperCase()}${whose.slice(1)} budgets and what their current periods spent`,
      description: scope === 'org' ? "Its own budgets and its projects'." : undefined,
      params: IdParams,
      errors: { 403: OWNER },
      responses: { 200: { description: 'the budgets', schema: BudgetListSchema } },
      handler: ({ params, ctx }) => budgets.list(ctx.principal, { type: scope, id: params.id }),
    });
  }

  api.route({
    method: 'delete',
    path: '/budgets/{id}',
    operationId: 'deleteBudget',
    tag,
    summary: 'Remove a budget: its scope is no longer limited by it',
    params: IdParams,
    errors: { 403: OWNER },
    responses: { 204: { description: 'removed' } },
    handler: ({ params, ctx }) => budgets.remove(ctx.principal, params.id),
  });
}
