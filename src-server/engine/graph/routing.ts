import { compilePattern, MAX_SUBJECT_LENGTH } from '../../assets/route-pattern';
import type { RoutingRule } from '../../contracts/assets';

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

/** Rules are evaluated in ascending priority number; the first match wins. */
export function firstMatchingRule(rules: readonly RoutingRule[], output: string): RoutingRule | undefined {
  return [...rules].sort((a, b) => a.priority - b.priority).find((rule) => matches(rule, output));
}
