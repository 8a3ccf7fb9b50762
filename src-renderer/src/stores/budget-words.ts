import type { Budget } from '@contracts/budgets';
import type { AuditEvent, AuditVia } from '@contracts/audit';
import { formatCost, formatCount } from './usage-figures';

/** "this day" / "this month": the period a budget's spend is counted over. */
export const periodWords = (period: Budget['period']) => (period === 'day' ? 'this day' : 'this month');

/** How far along a limit is, in whole percent (never rounded up to 100 before it is reached). */
export function percentOf(spent: number, limit: number): number {
  if (limit <= 0) return 0;
  const exact = (spent / limit) * 100;
  return exact < 100 ? Math.min(99, Math.floor(exact)) : Math.round(exact);
}

/** One limit of a budget, as its bar shows it. */
export interface BudgetLimit {
  kind: 'money' | 'tokens';
  /** "Money" / "Tokens": the bar's label. */
  label: string;
  percent: number;
  /** "$0.0123 of $0.05 this day · 25%". */
  text: string;
}

/** The limits a budget sets (money, tokens or both), each with what its period spent. */
export function budgetLimits(budget: Budget): BudgetLimit[] {
  const limits: BudgetLimit[] = [];
  const period = periodWords(budget.period);
  if (budget.amount_usd !== null) {
    const percent = percentOf(budget.spent_usd, budget.amount_usd);
    limits.push({
      kind: 'money',
      label: 'Money',
      percent,
      text: `${formatCost(budget.spent_usd)} of ${formatCost(budget.amount_usd)} ${period} · ${percent}%`,
    });
  }
  if (budget.tokens !== null) {
    const percent = percentOf(budget.spent_tokens, budget.tokens);
    limits.push({
      kind: 'tokens',
      label: 'Tokens',
      percent,
      text: `${formatCount(budget.spent_tokens)} of ${formatCount(budget.tokens)} tokens ${period} · ${percent}%`,
    });
  }
  return limits;
}

/** "Daily budget of project "Checkout"", with whose runs when it is one person's. */
export function budgetName(budget: Pick<Budget, 'period' | 'scope' | 'user_id'>, scopeName: string): string {
  const scope = budget.scope.type === 'project' ? 'project' : 'organisation';
  const whose = budget.user_id === null ? '' : ` (runs of user ${budget.user_id})`;
  return `${budget.period === 'day' ? 'Daily' : 'Monthly'} budget of ${scope} “${scopeName}”${whose}`;
}

/** A budget's status in words, so that its colour is never the only sign of it. */
export const BUDGET_STATUS_WORDS: Record<Budget['status'], string> = {
  ok: 'ok',
  warning: 'warning',
  exceeded: 'exceeded',
};
export const BUDGET_STATUS_HINTS: Record<Budget['status'], string> = {
  ok: 'under its warning level',
  warning: 'at its warning level or past it',
  exceeded: 'a limit is reached: new runs are refused',
};

/** The spend of every limit of a budget, in one line: "$0.0123 of $0.05 this day · 25%; 1,200 of 5,000 tokens …". */
export const spentWords = (budget: Budget) =>
  budgetLimits(budget)
    .map((l) => l.text)
    .join('; ');

/** How the one who made a change was signed in, in words. */
export const VIA_WORDS: Record<AuditVia, string> = {
  session: 'signed in',
  personal_token: 'personal token',
  oauth: 'OAuth client',
  api_token: 'API token',
  anonymous: 'anonymous',
  service: 'the service',
};

/** A value of the log as a short text: strings as they are, anything else as compact JSON. */
function brief(value: unknown): string {
  if (value === undefined) return '—';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** A whole side of a change in one line: an object's fields as `name: value`, anything else as `brief` says. */
function fields(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return brief(value);
  return Object.entries(value)
    .map(([key, inner]) => `${key}: ${brief(inner)}`)
    .join(', ');
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * What a change did, in one short line: the fields that differ (`amount_usd: 0.05 → 0.1`), or what was made or
 * removed. The whole of both sides is shown apart, as JSON text.
 */
export function changeSummary(event: Pick<AuditEvent, 'before' | 'after'>, max = 120): string {
  const { before, after } = event;
  if (before === null && after === null) return '—';
  if (before === null) return clip(`new: ${fields(after)}`, max);
  if (after === null) return clip(`removed: ${fields(before)}`, max);
  const objects =
    typeof before === 'object' && typeof after === 'object' && !Array.isArray(before) && !Array.isArray(after);
  if (!objects) return clip(`${brief(before)} → ${brief(after)}`, max);
  const was = before as Record<string, unknown>;
  const now = after as Record<string, unknown>;
  const changed = [...new Set([...Object.keys(was), ...Object.keys(now)])]
    .filter((key) => JSON.stringify(was[key]) !== JSON.stringify(now[key]))
    .map((key) => `${key}: ${brief(was[key])} → ${brief(now[key])}`);
  return clip(changed.length ? changed.join('; ') : 'no field changed', max);
}

/** A side of a change, in full, as indented JSON text. */
export const changeJson = (value: unknown) => (value === null ? 'null (none)' : JSON.stringify(value, null, 2));
