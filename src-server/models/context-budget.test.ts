import { describe, expect, it } from 'vitest';
import type { ChatMessage } from './model-client';
import { estimateTokens, trimToBudget } from './context-budget';

const msg = (role: ChatMessage['role'], chars: number, tag = ''): ChatMessage => ({
  role,
  content: tag + 'x'.repeat(chars),
});

describe('the context budget', () => {
  it('leaves messages that fit alone', () => {
    const messages = [msg('system', 100), msg('user', 100)];
    expect(trimToBudget(messages, 1000)).toEqual({ messages, report: null });
  });

  it('drops the oldest messages first, never the system message or the newest user message', () => {
    const messages = [
      msg('system', 400, 's'),
      msg('user', 400, 'old-q'),
      msg('assistant', 400, 'old-a'),
      msg('user', 400, 'mid-q'),
      msg('assistant', 400, 'mid-a'),
      msg('user', 400, 'new'),
    ];
    const { messages: kept, report } = trimToBudget(messages, 420);
    expect(kept.map((m) => m.content.slice(0, 5))).toEqual(['sxxxx', 'mid-a', 'newxx']);
    expect(report).toEqual({
      dropped_messages: 3,
      estimated_tokens_before: estimateTokens(messages),
      estimated_tokens_after: estimateTokens(kept),
      budget: 420,
    });
    expect(report!.estimated_tokens_after).toBeLessThanOrEqual(420);
  });

  it('reports when even the protected messages exceed the budget', () => {
    const { messages, report } = trimToBudget([msg('system', 4000), msg('assistant', 40), msg('user', 4000)], 500);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(report!.estimated_tokens_after).toBeGreaterThan(500);
  });
});
