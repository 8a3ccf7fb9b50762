import { BudgetListSchema, BudgetSchema, type SetBudget } from '@contracts/budgets';
import type { OwnedScope } from '@contracts/tenancy';
import { api } from './http';

/** Where a budget is set: a project's or an organisation's (docs/operations.md#budgets). */
export type BudgetScopeType = OwnedScope['type'];

const base = (scope: BudgetScopeType, id: string) =>
  `/${scope === 'project' ? 'projects' : 'orgs'}/${encodeURIComponent(id)}`;

/**
 * Spend limits per project and organisation, with what their current periods spent. Reading and setting them needs
 * the owner or admin role on the scope (403 otherwise).
 */
export const budgetsApi = {
  /** The scope's budgets; an organisation's come with its projects'. */
  list: (scope: BudgetScopeType, id: string) => api(`${base(scope, id)}/budgets`, { schema: BudgetListSchema }),
  /** Sets the scope's budget of a period (and user): setting it again replaces it. */
  set: (scope: BudgetScopeType, id: string, body: SetBudget) =>
    api(`${base(scope, id)}/budget`, { method: 'PUT', body, schema: BudgetSchema }),
  remove: (id: string) => api<void>(`/budgets/${encodeURIComponent(id)}`, { method: 'DELETE' }),
};
