import { describe, expect, it } from 'vitest';
import type { ChatMessage } from './model-client';
import { CUT_MARK, estimateTokens, trimToBudget } from './context-budget';

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

  it('cuts inside the newest message, oldest output first, then the project context, never the run message', () => {
    const parts = [
      { text: 'the question '.repeat(20) },
      { text: '\n## Project context\n' },
      { text: 'c'.repeat(1200), trimmable: { name: 'project_context', order: 2 } },
      { text: '\n### analysis\n' },
      { text: 'a'.repeat(800), trimmable: { name: 'output:analysis', order: 0 } },
      { text: '\n### design\n' },
      { text: 'd'.repeat(800), trimmable: { name: 'output:design', order: 1 } },
    ];
    const newest: ChatMessage = { role: 'user', content: parts.map((p) => p.text).join(''), parts };
    const messages = [msg('system', 400, 's'), msg('assistant', 400, 'old-a'), newest];
    const { messages: sent, report } = trimToBudget(messages, 500);
    expect(report).toEqual({
      dropped_messages: 1,
      estimated_tokens_before: estimateTokens(messages),
      estimated_tokens_after: estimateTokens(sent),
      budget: 500,
      trimmed_parts: ['output:analysis', 'output:design', 'project_context'],
    });
    expect(report!.estimated_tokens_after).toBeLessThanOrEqual(500);
    expect(sent.map((m) => m.role)).toEqual(['system', 'user']);
    const content = sent[1]!.content;
    // Both outputs are gone but for the mark; the project context is shortened, the question whole.
    expect(content).toContain('the question '.repeat(20));
    expect(content).not.toContain('a'.repeat(10));
    expect(content).not.toContain('d'.repeat(10));
    expect(content).toContain(`c${CUT_MARK}`);
    expect(content.split(CUT_MARK)).toHaveLength(4);
    // What goes out is the plain message: the parts stay behind.
    expect(sent[1]).toEqual({ role: 'user', content });
  });

  it('cuts only as much as the budget needs', () => {
    const parts = [
      { text: 'q'.repeat(100) },
      { text: 'a'.repeat(2000), trimmable: { name: 'output:analysis', order: 0 } },
      { text: 'c'.repeat(2000), trimmable: { name: 'project_context', order: 1 } },
    ];
    const newest: ChatMessage = { role: 'user', content: parts.map((p) => p.text).join(''), parts };
    const { messages: sent, report } = trimToBudget([msg('system', 400), newest], 900);
    expect(report!.trimmed_parts).toEqual(['output:analysis']);
    expect(report!.estimated_tokens_after).toBeLessThanOrEqual(900);
    expect(report!.estimated_tokens_after).toBeGreaterThan(890);
    expect(sent[1]!.content).toContain('c'.repeat(2000));
  });
});
