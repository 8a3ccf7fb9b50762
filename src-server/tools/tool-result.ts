import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';

/**
 * A tool call that cannot be done as asked (bad input, a refused path, a failing git): its message is the tool's
 * answer to the model, which can then try again differently. Never carries a server path or a secret.
 */
export class ToolCallError extends Error {
  override name = 'ToolCallError';
}

/**
 * A tool's answer cut to `max` characters (MAX_TOOL_RESULT_CHARS), the note of what was cut included, so that the
 * model and the record know the rest exists. `unread` names what was never read at all (git's output past the point
 * where it was stopped), for the same note. The cut never splits a character that takes two UTF-16 units.
 */
export function capToolText(text: string, options: { max?: number; unread?: string } = {}): string {
  const { max = MAX_TOOL_RESULT_CHARS, unread } = options;
  if (text.length <= max && unread === undefined) return text;
  const note = (kept: number) => {
    const cut = text.length - kept;
    const parts = [cut > 0 ? `${cut} of ${text.length} characters not shown` : '', unread ?? ''].filter(Boolean);
    return `\n[cut: ${parts.join('; ')}]`;
  };
  let kept = text.length <= max - note(text.length).length ? text.length : Math.max(0, max - note(0).length);
  if (kept > 0 && kept < text.length && /[\uD800-\uDBFF]/.test(text[kept - 1]!)) kept -= 1;
  return text.slice(0, kept) + note(kept);
}
