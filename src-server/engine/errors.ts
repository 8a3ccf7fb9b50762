/** A run past RUN_TIMEOUT_S: `TimeoutError: run exceeded <N>s` (docs/run-lifecycle.md#timeouts-and-orphans). */
export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/**
 * This process stopped executing a leg without ending the run: it shuts down, or it lost the run (cancelled, or taken
 * over after a stall). Never recorded: the run goes on, or ends, elsewhere.
 */
export class LegStoppedError extends Error {
  override name = 'LegStoppedError';
}

/** A run that cannot go on: its agent is not loaded, or the processes executing it kept dying. */
export class RunAbandonedError extends Error {
  override name = 'RunAbandonedError';
}

/**
 * A budget of the run's project or organisation was spent (docs/operations.md#budgets): the run ends after the call it
 * was making, with `BudgetExceeded: <the budget> …`.
 */
export class BudgetExceeded extends Error {
  override name = 'BudgetExceeded';
}
