import { MAX_TOOL_RESULT_CHARS } from '../contracts/tools';

/**
 * A tool call that cannot be done as asked (bad input, a refused path, a failing git): its message is the tool's
 * answer to the model, which can then try again differently. Never carries a server path or a secret.
 */
export class ToolCallError extends Error {
  override name = 'ToolCallError';
}

/** Room kept for the note that says what was cut, so that text and note together stay within the limit. */
const NOTE_ROOM = 200;

/**
 * `text` cut to MAX_TOOL_RESULT_CHARS, the note included, with a last line saying how much was cut. `unread`
 * names what was never read at all (git's output past the point where it was stopped), for the same note.
 */
export function capToolText(text: string, unread?: string): string {
  if (text.length <= MAX_TOOL_RESULT_CHARS && unread === undefined) return text;
  let keep = Math.min(text.length, MAX_TOOL_RESULT_CHARS - NOTE_ROOM);
  // Never half of a surrogate pair.
  if (keep < text.length && /[\uD800-\uDBFF]/.test(text.charAt(keep - 1))) keep -= 1;
  const cut = text.length - keep;
  const parts = [cut > 0 ? `${cut} more characters` : '', unread ?? ''].filter(Boolean);
  return `${text.slice(0, keep)}\n… cut: ${parts.join(' and ')}`;
}
