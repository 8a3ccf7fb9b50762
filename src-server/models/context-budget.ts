import type { ChatMessage, TrimReport } from './model-client';

/** About four characters per token for English text and code, plus a few tokens of message framing. */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce((sum, m) => sum + Math.ceil(m.content.length / 4) + 4, 0);
}

/**
 * Drops the oldest messages until the estimate fits the budget. The system instructions and the
 * newest user message are never dropped; when they alone exceed the budget they are sent as they
 * are and the report says so (its `estimated_tokens_after` stays above `budget`).
 */
export function trimToBudget(
  messages: readonly ChatMessage[],
  budget: number,
): { messages: ChatMessage[]; report: TrimReport | null } {
  const before = estimateTokens(messages);
  if (before <= budget) return { messages: [...messages], report: null };
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const kept = messages.map((m, i) => ({ m, keep: true, protected: m.role === 'system' || i === lastUser }));
  let total = before;
  for (const entry of kept) {
    if (total <= budget) break;
    if (entry.protected) continue;
    entry.keep = false;
    total -= estimateTokens([entry.m]);
  }
  const result = kept.filter((e) => e.keep).map((e) => e.m);
  return {
    messages: result,
    report: {
      dropped_messages: messages.length - result.length,
      estimated_tokens_before: before,
      estimated_tokens_after: estimateTokens(result),
      budget,
    },
  };
}
