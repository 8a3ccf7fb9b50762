import type { Budget } from '@contracts/budgets';
import { describe, expect, it } from 'vitest';
import { budgetLimits, budgetName, changeSummary, percentOf } from './budget-words';

const budget = (extra: Partial<Budget>): Budget => ({
  id: '00000000-0000-4000-8000-0000000000b1',
  scope: { type: 'project', id: '00000000-0000-4000-8000-000000000003' },
  user_id: null,
  period: 'day',
  amount_usd: 0.05,
  tokens: null,
  warn_at: 0.8,
  time_zone: 'UTC',
  set_at: '2025-03-03T08:00:00Z',
  period_start: '2025-03-03T00:00:00Z',
  period_end: '2025-03-04T00:00:00Z',
  spent_usd: 0.0125,
  spent_tokens: 1200,
  status: 'ok',
  ...extra,
});

describe('budget words', () => {
  it('says each limit as spent of limit, the period and the percentage', () => {
    expect(budgetLimits(budget({}))).toEqual([
      { kind: 'money', label: 'Money', percent: 25, text: '$0.0125 of $0.0500 this day · 25%' },
    ]);
    expect(budgetLimits(budget({ amount_usd: null, tokens: 5000, period: 'month' }))[0]!.text).toBe(
      '1,200 of 5,000 tokens this month · 24%',
    );
  });

  it('never reads 100% before a limit is reached, and past it says how far', () => {
    expect(percentOf(99.7, 100)).toBe(99);
    expect(percentOf(100, 100)).toBe(100);
    expect(percentOf(130, 100)).toBe(130);
    expect(percentOf(1, 0)).toBe(0);
  });

  it('names a budget by its period, scope and person', () => {
    expect(budgetName(budget({}), 'Checkout')).toBe('Daily budget of project “Checkout”');
    expect(budgetName(budget({ period: 'month', scope: { type: 'org', id: 'x' }, user_id: 'u1' }), 'Acme')).toBe(
      'Monthly budget of organisation “Acme” (runs of user u1)',
    );
  });

  it('sums a change up by the fields that differ, or by what was made or removed', () => {
    expect(
      changeSummary({ before: { amount_usd: 0.05, tokens: null }, after: { amount_usd: 0.1, tokens: null } }),
    ).toBe('amount_usd: 0.05 → 0.1');
    expect(changeSummary({ before: null, after: { name: 'TOKEN' } })).toBe('new: name: TOKEN');
    expect(changeSummary({ before: { name: 'TOKEN' }, after: null })).toBe('removed: name: TOKEN');
    expect(changeSummary({ before: 'a', after: 'b' })).toBe('a → b');
    expect(changeSummary({ before: null, after: { text: 'x'.repeat(200) } }, 20)).toHaveLength(20);
  });
});
