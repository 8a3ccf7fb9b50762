/**
 * What the engine asks before each model call of a run (docs/operations.md#budgets): the budgets the run counts
 * against, as they stand. Implemented by the budgets service; a run without one is never limited.
 */
export interface BudgetGuard {
  beforeCall(run: { id: string; projectId: string }): Promise<BudgetVerdict>;
}

export interface BudgetVerdict {
  /** A budget is spent: the words of the run's end (`BudgetExceeded: <these>`). */
  refusal: string | null;
  /** Budgets that reached their warning level with this call, first seen by this run: said on its stream. */
  warnings: { budget_id: string; message: string }[];
}
