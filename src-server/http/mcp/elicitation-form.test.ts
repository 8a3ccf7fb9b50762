import { describe, expect, it } from 'vitest';
import type { PendingGate } from '../../contracts/runs';
import { decisionOf, MAX_QUESTION_CHARS, questionFor, readAnswer } from './elicitation-form';

const atGate = { toolCall: false, contextNode: 'analysis' };
const atCall = { toolCall: true, contextNode: null };

const gate: PendingGate = {
  node: 'gate',
  question: 'Publish this review?',
  required_context: ['analysis'],
  context: { intake: 'The ask.', analysis: 'The review.' },
};

describe('the question asked at a gate', () => {
  it('carries the question and every phase the gate shows; an edit replaces the last of them', () => {
    const question = questionFor('review', gate);
    expect(question.message).toBe('review: Publish this review?\n\n## intake\nThe ask.\n\n## analysis\nThe review.');
    expect(question.contextNode).toBe('analysis');
    expect(question.requestedSchema.required).toEqual(['decision']);
    expect(question.requestedSchema.properties.decision!.oneOf).toEqual([
      { const: 'approve', title: 'Approve' },
      { const: 'edit', title: 'Approve with my edited text' },
      { const: 'respond', title: 'Send my answer back to the phase before' },
      { const: 'reject', title: 'Reject' },
    ]);
  });

  it('is cut to a size a client can show', () => {
    const long = questionFor('review', { ...gate, context: { analysis: 'x'.repeat(3 * MAX_QUESTION_CHARS) } });
    expect(long.message).toHaveLength(MAX_QUESTION_CHARS);
    expect(long.message.endsWith('…')).toBe(true);
  });

  it('shows a tool call by its tool and arguments', () => {
    const question = questionFor('tool-review', {
      ...gate,
      node: 'intake',
      question: 'Run mock.append?',
      tool_call: {
        call_id: 'r:intake:1:1:0',
        tool: 'mock.append',
        server: 'mock',
        description: 'Appends a line.',
        arguments: { line: 'hello' },
        canonical_arguments: '{"line":"hello"}',
        arguments_sha256: 'x',
        input_schema: {},
        annotations: { read_only: false, idempotent: false, destructive: false },
        interrupted: false,
        attempts: 0,
      },
    });
    expect(question.message).toContain('mock.append: Appends a line.\narguments:\n{\n  "line": "hello"\n}');
    expect(question.contextNode).toBeNull();
  });
});

describe('an answer', () => {
  it('is refused unless its decision is one of the four', () => {
    expect(readAnswer({ decision: 'maybe' })).toBe('the decision must be one of approve, edit, respond, reject');
    expect(readAnswer(undefined)).toBe('the decision must be one of approve, edit, respond, reject');
    expect(readAnswer({ decision: 'approve', reason: '  ', text: 3 })).toEqual({
      decision: 'approve',
      reason: null,
      text: null,
    });
  });

  it('becomes the gate decision it names; an edit or an answer without text is none', () => {
    const answer = (decision: string, text?: string) => readAnswer({ decision, reason: 'why', text }) as never;
    expect(decisionOf(answer('approve'), atGate)).toEqual({ decision: 'approve', reason: 'why' });
    expect(decisionOf(answer('edit', 'New.'), atGate)).toEqual({
      decision: 'approve',
      reason: 'why',
      edits: { analysis: 'New.' },
    });
    expect(decisionOf(answer('respond', 'More.'), atGate)).toEqual({
      decision: 'respond',
      reason: 'why',
      response: 'More.',
    });
    expect(decisionOf(answer('reject'), atGate)).toEqual({ decision: 'reject', reason: 'why' });
    expect(decisionOf(answer('edit'), atGate)).toBe('an edit needs the text');
    expect(decisionOf(answer('respond'), atGate)).toBe('an answer needs the text');
  });

  it('edits a tool call with a JSON object, nothing else', () => {
    const answer = (text: string) => readAnswer({ decision: 'edit', text }) as never;
    expect(decisionOf(answer('{"line":"x"}'), atCall)).toEqual({
      decision: 'approve',
      reason: null,
      arguments: { line: 'x' },
    });
    expect(decisionOf(answer('not json'), atCall)).toBe('the edited arguments are not JSON');
    expect(decisionOf(answer('[1]'), atCall)).toBe('the edited arguments must be an object');
  });
});

describe('the question in the shapes of the revision the client speaks', () => {
  it('names the options in enumNames for a 2025-06-18 client, which knows no titled oneOf', () => {
    const decision = questionFor('review', gate, '2025-06-18').requestedSchema.properties.decision!;
    expect(decision.oneOf).toBeUndefined();
    expect(decision.enum).toEqual(['approve', 'edit', 'respond', 'reject']);
    expect(decision.enumNames).toEqual([
      'Approve',
      'Approve with my edited text',
      'Send my answer back to the phase before',
      'Reject',
    ]);
  });
});
