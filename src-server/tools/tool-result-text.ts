import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';

/**
 * A tool's answer cut to MAX_TOOL_RESULT_CHARS, the note of what was cut included, so that the model and the record
 * know the rest exists. The cut never splits a character that takes two UTF-16 units.
 */
export function capToolText(text: string, max = MAX_TOOL_RESULT_CHARS): string {
  if (text.length <= max) return text;
  const note = (kept: number) => `\n[cut: ${text.length - kept} of ${text.length} characters not shown]`;
  let kept = Math.max(0, max - note(0).length);
  if (kept > 0 && /[\uD800-\uDBFF]/.test(text[kept - 1]!)) kept -= 1;
  return text.slice(0, kept) + note(kept);
}
