import { RE2JS } from 're2js';
import type { RoutingRule } from '../contracts/assets';

/** Bounds that keep a user-written pattern from costing much: RE2 runs in linear time, and these cap its input. */
export const MAX_PATTERN_LENGTH = 500;
const MAX_SUBJECT_LENGTH = 200_000;

export function compilePattern(pattern: string): RE2JS {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new Error(`pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  return RE2JS.compile(pattern);
}

function matches(rule: RoutingRule, output: string): boolean {
  switch (rule.condition) {
    case 'always':
      return true;
    case 'contains':
      return output.toLowerCase().includes(rule.match.toLowerCase());
    case 'starts_with':
      return output.trimStart().startsWith(rule.match);
    case 'ends_with':
      return output.trimEnd().endsWith(rule.match);
    case 'regex':
      return compilePattern(rule.match).matcher(output.slice(0, MAX_SUBJECT_LENGTH)).find();
  }
}

/** SPEC: rules are evaluated in ascending priority number; the first match wins. */
export function firstMatchingRule(rules: readonly RoutingRule[], output: string): RoutingRule | undefined {
  return [...rules].sort((a, b) => a.priority - b.priority).find((rule) => matches(rule, output));
}
