import type { ChatMessage, TrimReport } from './model-client';

/** About four characters per token for English text and code, plus a few tokens of message framing. */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce((sum, m) => sum + Math.ceil(m.content.length / 4) + 4, 0);
}

/** Marks where a part of a message was cut, so that the model knows the text it reads is incomplete. */
export const CUT_MARK = '\n[… cut to fit the context budget]';

/**
 * Shortens the trimmable parts of one message, lowest `order` first, until its content is at most
 * `maxChars` long (or nothing trimmable is left); returns the message and the names of the parts cut.
 */
function cutInside(message: ChatMessage, maxChars: number): { message: ChatMessage; cut: string[] } {
  const parts = (message.parts ?? []).map((p) => ({ ...p }));
  let excess = message.content.length - maxChars;
  const cut: string[] = [];
  const byOrder = parts.filter((p) => p.trimmable).sort((a, b) => a.trimmable!.order - b.trimmable!.order);
  for (const part of byOrder) {
    if (excess <= 0) break;
    // A part no longer than the mark saves nothing by being cut.
    if (part.text.length <= CUT_MARK.length) continue;
    const keep = Math.max(0, part.text.length - excess - CUT_MARK.length);
    excess -= part.text.length - (keep + CUT_MARK.length);
    part.text = part.text.slice(0, keep) + CUT_MARK;
    cut.push(part.trimmable!.name);
  }
  if (!cut.length) return { message, cut };
  return { message: { role: message.role, content: parts.map((p) => p.text).join(''), parts }, cut };
}

/**
 * Drops the oldest messages until the estimate fits the budget. The system instructions and the
 * newest user message are never dropped; when they are still over, the trimmable parts of the newest
 * user message (earlier phases' outputs, the project context) are cut. When what is left (the system
 * instructions and the run's own message) still exceeds the budget, the report says so: its
 * `estimated_tokens_after` stays above `budget`. The messages returned carry only role, content and tool calls.
 *
 * A phase that calls tools adds its own turns after the user message (the model's calls, the tools' answers): they
 * are never dropped, since an answer without its call (or a call without its answer) is no conversation a provider
 * takes; when they alone are over the budget, the tools' answers are shortened, oldest first.
 */
/** A tool's answer is never shortened below this: the model still learns what the tool said first. */
const TOOL_ANSWER_FLOOR_CHARS = 400;

export function trimToBudget(
  messages: readonly ChatMessage[],
  budget: number,
): { messages: ChatMessage[]; report: TrimReport | null } {
  const before = estimateTokens(messages);
  const plain = (m: ChatMessage): ChatMessage => ({
    role: m.role,
    content: m.content,
    ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
    ...(m.tool_call ? { tool_call: m.tool_call } : {}),
  });
  if (before <= budget) return { messages: messages.map(plain), report: null };
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const kept = messages.map((m, i) => ({
    m,
    keep: true,
    protected: m.role === 'system' || (lastUser >= 0 && i >= lastUser),
  }));
  let total = before;
  for (const entry of kept) {
    if (total <= budget) break;
    if (entry.protected) continue;
    entry.keep = false;
    total -= estimateTokens([entry.m]);
  }
  let trimmedParts: string[] = [];
  if (total > budget && lastUser >= 0) {
    const newest = kept[lastUser]!;
    const others = total - estimateTokens([newest.m]);
    // estimateTokens() counts ceil(chars / 4) + 4 for a message: the longest content that still fits.
    const { message, cut } = cutInside(newest.m, Math.max(0, (budget - others - 4) * 4));
    newest.m = message;
    trimmedParts = cut;
  }
  for (const entry of kept) {
    if (total <= budget) break;
    if (entry.m.role !== 'tool') continue;
    const excess = (total - budget) * 4;
    const keep = Math.max(TOOL_ANSWER_FLOOR_CHARS, entry.m.content.length - excess);
    if (keep >= entry.m.content.length) continue;
    const shortened = `${entry.m.content.slice(0, keep)}\n[cut to fit the context budget]`;
    total += estimateTokens([{ ...entry.m, content: shortened }]) - estimateTokens([entry.m]);
    entry.m = { ...entry.m, content: shortened };
    trimmedParts = [...trimmedParts, `tool:${entry.m.tool_call?.name ?? 'answer'}`];
  }
  const result = kept.filter((e) => e.keep).map((e) => plain(e.m));
  return {
    messages: result,
    report: {
      dropped_messages: messages.length - result.length,
      estimated_tokens_before: before,
      estimated_tokens_after: estimateTokens(result),
      budget,
      ...(trimmedParts.length ? { trimmed_parts: trimmedParts } : {}),
    },
  };
}
