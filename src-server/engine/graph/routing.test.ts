import { describe, expect, it } from 'vitest';
import type { RoutingRule } from '../../contracts/assets';
import { compilePattern, MAX_PATTERN_LENGTH } from '../../assets/route-pattern';
import { firstMatchingRule } from './routing';

const rule = (condition: RoutingRule['condition'], match: string, target: string, priority: number): RoutingRule => ({
  condition,
  match,
  target,
  priority,
});

describe('routing rules', () => {
  it('contains matches case-insensitively', () => {
    expect(firstMatchingRule([rule('contains', 'BLOCKER', 'fix', 1)], 'found a blocker here')?.target).toBe('fix');
    expect(firstMatchingRule([rule('contains', 'blocker', 'fix', 1)], 'all fine')).toBeUndefined();
  });

  it('starts_with and ends_with compare the trimmed output, case-sensitively', () => {
    expect(firstMatchingRule([rule('starts_with', 'URGENT', 'page', 1)], '  URGENT: disk full')?.target).toBe('page');
    expect(firstMatchingRule([rule('starts_with', 'URGENT', 'page', 1)], 'urgent: disk full')).toBeUndefined();
    expect(firstMatchingRule([rule('ends_with', 'DONE', 'close', 1)], 'work DONE\n')?.target).toBe('close');
    expect(firstMatchingRule([rule('ends_with', 'DONE', 'close', 1)], 'DONE not yet')).toBeUndefined();
  });

  it('regex matches anywhere in the output', () => {
    expect(
      firstMatchingRule([rule('regex', 'severity:\\s*(high|critical)', 'escalate', 1)], 'Severity: critical'),
    ).toBeUndefined();
    expect(
      firstMatchingRule([rule('regex', '(?i)severity:\\s*(high|critical)', 'escalate', 1)], 'Severity: critical')
        ?.target,
    ).toBe('escalate');
  });

  it('always matches', () => {
    expect(firstMatchingRule([rule('always', '', 'next', 1)], '')?.target).toBe('next');
  });

  it('evaluates in ascending priority and the first match wins', () => {
    const rules = [
      rule('always', '', 'fallback', 99),
      rule('contains', 'bug', 'second', 20),
      rule('contains', 'bug', 'first', 10),
    ];
    expect(firstMatchingRule(rules, 'a bug')?.target).toBe('first');
    expect(firstMatchingRule(rules, 'nothing')?.target).toBe('fallback');
  });

  it('refuses patterns that do not compile or are too long, and runs in linear time', () => {
    expect(() => compilePattern('(unclosed')).toThrow();
    expect(() => compilePattern('a'.repeat(MAX_PATTERN_LENGTH + 1))).toThrow(/longer than/);
    const started = Date.now();
    // Catastrophic for a backtracking engine; RE2 answers at once.
    expect(firstMatchingRule([rule('regex', '(a+)+$', 'x', 1)], `${'a'.repeat(50_000)}b`)).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
