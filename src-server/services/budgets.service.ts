import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { OwnedScope } from '../contracts/tenancy';
import { budgetLabel, DEFAULT_WARN_AT, type Budget, type SetBudget } from '../contracts/budgets';
import { badRequest, notFound, ServiceError } from '../contracts/errors';
import type { BudgetState, BudgetsRepository } from '../db/budgets.repository';
import type { BudgetGuard, BudgetVerdict } from '../engine';
import type { AuditLog } from '../auth/audit-log';
import { auditScopeOf, requireScopeOwner } from './scope-owners';

/** How long a process trusts that no budget exists before it looks again (one set here applies at once). */
const NONE_KNOWN_MS = 5_000;

const money = (usd: number) => `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;

/** What a budget's period has spent against each of its limits, in words. */
function spentWords(b: BudgetState): string {
  const parts: string[] = [];
  if (b.amount_usd !== null) parts.push(`${money(b.spent_usd)} of ${money(b.amount_usd)}`);
  if (b.tokens !== null)
    parts.push(`${b.spent_tokens.toLocaleString('en')} of ${b.tokens.toLocaleString('en')} tokens`);
  return parts.join(', ');
}

/** The words of a refusal or a stopped run; `BudgetExceeded:` first, as the run's error detail begins. */
export function budgetRefusal(b: BudgetState): string {
  return `${budgetLabel(b, b.scope_name)} is spent (${spentWords(b)}); it starts again at ${b.period_end}`;
}

const shown = ({ scope_name: _name, ...budget }: BudgetState): Budget => budget;

function checkTimeZone(zone: string): void {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
  } catch {
    throw badRequest(`time_zone: ${JSON.stringify(zone)} is not an IANA time zone name (e.g. Europe/Paris)`);
  }
}

/**
 * Spend limits per organisation and project (docs/operations.md#budgets): set by owners and admins of the scope,
 * checked when a run is asked for (refused once a budget is spent) and before each model call of a running run (which
 * then stops), with a warning, once per period, when a budget reaches its warning level: a webhook event, and an
 * event on the stream of the run whose call saw it.
 */
export function budgetsService(deps: {
  access: Pick<Access, 'requireProjectRole' | 'requireOrgConfigRole'>;
  budgets: BudgetsRepository;
  audit: AuditLog;
}) {
  const { access, budgets, audit } = deps;
  /** When a look found no budget anywhere; 0 while unknown or once one exists. */
  let noneSince = 0;
  /** Counts the budgets set here: a look that began before one was set does not say there is none. */
  let sets = 0;
  /** The one look under way: the calls that need its answer at once share it. */
  let looking: Promise<boolean> | null = null;
  const lookForAny = (): Promise<boolean> => {
    if (looking) return looking;
    const setsBefore = sets;
    looking = budgets
      .any()
      .then((any) => {
        if (sets === setsBefore) noneSince = any ? 0 : Date.now();
        return any;
      })
      .finally(() => {
        looking = null;
      });
    return looking;
  };

  /**
   * The budgets a run counts against, unless none exists anywhere. Then no call waits for a query: a look every
   * NONE_KNOWN_MS, made in the background and shared, tells of a budget set elsewhere (one set here is looked for at
   * once). With a thousand runs streaming, a query on each call's way to its model was a wait of seconds in the pool.
   */
  async function applying(projectId: string, who: { userId: string | null } | { runId: string }) {
    if (noneSince !== 0) {
      if (Date.now() - noneSince >= NONE_KNOWN_MS) lookForAny().catch(() => undefined);
      return [];
    }
    if (!(await lookForAny())) return [];
    return budgets.applying(projectId, who);
  }

  /**
   * Sends each warning (and the webhook of a budget spent) once per period; answers what this check saw first. A
   * run's admission leaves the warning to the run's first call (`warn` false), whose stream then says it.
   */
  async function verdict(projectId: string, states: BudgetState[], warn = true): Promise<BudgetVerdict> {
    const result: BudgetVerdict = { refusal: null, warnings: [] };
    for (const b of states) {
      if (b.status === 'ok') continue;
      if (warn && (await budgets.reached(b, 'warning', projectId))) {
        result.warnings.push({
          budget_id: b.id,
          message: `${budgetLabel(b, b.scope_name)} is at ${Math.round(b.warn_at * 100)}% or more (${spentWords(b)})`,
        });
      }
      if (b.status === 'exceeded') {
        await budgets.reached(b, 'exceeded', projectId);
        result.refusal ??= budgetRefusal(b);
      }
    }
    return result;
  }

  const guard: BudgetGuard = {
    async beforeCall(run) {
      return verdict(run.projectId, await applying(run.projectId, { runId: run.id }));
    },
  };

  return {
    guard,

    /** Refuses a new run of `userId` in the project while a budget it counts against is spent (429 until it resets). */
    async admit(projectId: string, userId: string | null): Promise<void> {
      const states = await applying(projectId, { userId });
      const { refusal } = await verdict(projectId, states, false);
      if (refusal === null) return;
      const spent = states.find((b) => b.status === 'exceeded')!;
      const error = new ServiceError(429, 'budget_exceeded', `BudgetExceeded: ${refusal}`);
      error.retryAfterS = Math.max(1, Math.ceil((Date.parse(spent.period_end) - Date.now()) / 1000));
      throw error;
    },

    async set(principal: Principal, scope: OwnedScope, body: SetBudget): Promise<Budget> {
      await requireScopeOwner(access, principal, scope);
      const timeZone = body.time_zone ?? 'UTC';
      checkTimeZone(timeZone);
      const userId = body.user_id ?? null;
      const before = (await budgets.ofScope(scope)).find((b) => b.period === body.period && b.user_id === userId);
      const budget = await budgets.put({
        scope,
        userId,
        period: body.period,
        amountUsd: body.amount_usd ?? null,
        tokens: body.tokens ?? null,
        warnAt: body.warn_at ?? DEFAULT_WARN_AT,
        timeZone,
        setBy: principal.id,
      });
      noneSince = 0;
      sets++;
      await audit.record(principal, {
        action: 'budget.set',
        ...auditScopeOf(scope),
        target: `${body.period} budget${userId ? ` of user ${userId}` : ''}`,
        before: before ? limits(before) : null,
        after: limits(budget),
      });
      return shown(budget);
    },

    /** The scope's budgets with their spend (an organisation's with its projects'), for who may set them. */
    async list(principal: Principal, scope: OwnedScope): Promise<{ budgets: Budget[] }> {
      await requireScopeOwner(access, principal, scope);
      return { budgets: (await budgets.ofScope(scope, scope.type === 'org')).map(shown) };
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const budget = await budgets.get(id);
      if (!budget) throw notFound(`budget ${id} not found`);
      try {
        await requireScopeOwner(access, principal, budget.scope);
      } catch (error) {
        // Someone who cannot see the scope learns nothing of the budget either.
        if (error instanceof ServiceError && error.status === 404) throw notFound(`budget ${id} not found`);
        throw error;
      }
      await budgets.remove(id);
      await audit.record(principal, {
        action: 'budget.deleted',
        ...auditScopeOf(budget.scope),
        target: `${budget.period} budget${budget.user_id ? ` of user ${budget.user_id}` : ''}`,
        before: limits(budget),
      });
    },
  };
}

/** What a budget limits, as the audit log keeps it. */
const limits = (b: BudgetState) => ({
  period: b.period,
  amount_usd: b.amount_usd,
  tokens: b.tokens,
  warn_at: b.warn_at,
  user_id: b.user_id,
  time_zone: b.time_zone,
});

export type BudgetsService = ReturnType<typeof budgetsService>;
