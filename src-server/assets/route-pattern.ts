import { RE2JS } from 're2js';

/**
 * Routing rules may carry a user-written regular expression. RE2 runs in linear time, and these bounds
 * cap its input, so a pattern cannot cost much. Used where patterns are checked (the asset compiler,
 * saved overrides) and where they run (runtime/routing.ts).
 */
export const MAX_PATTERN_LENGTH = 500;
export const MAX_SUBJECT_LENGTH = 200_000;

export function compilePattern(pattern: string): RE2JS {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new Error(`pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  return RE2JS.compile(pattern);
}
