import { describe, expect, it } from 'vitest';
import { decideArguments, editedPhase, outcomeOf } from './decision';
import type { Stop } from './stops';

const THREAD = '7c1a2f0e-5b7d-4e8a-9c3d-2f1e0a9b8c7d';
const RUN = '0b6f2c1d-3e4a-4b5c-8d9e-1f2a3b4c5d6e';

const gate: Stop = {
  kind: 'gate',
  runId: RUN,
  threadId: THREAD,
  agent: 'review',
  round: 2,
  gate: 'gate',
  question: 'Publish this review?',
  content: '## intake\nThe change renames the loader.\n\n## analysis\n## Must fix\nNothing.',
  decideRole: 'member',
};
const toolCall: Stop = {
  ...gate,
  kind: 'tool_call',
  gate: 'intake',
  callId: 'call-1',
  tool: 'project.write_file',
  arguments: { path: 'a.md' },
};

describe('decideArguments', () => {
  it('names the gate or the call, the round read, and the reason when there is one', () => {
    expect(decideArguments(gate, { decision: 'approve', text: '', reason: '  ' })).toEqual({
      thread_id: THREAD,
      gate: 'gate',
      round: 2,
      decision: 'approve',
    });
    expect(decideArguments(toolCall, { decision: 'approve', text: '', reason: 'fine' })).toEqual({
      thread_id: THREAD,
      call_id: 'call-1',
      round: 2,
      decision: 'approve',
      reason: 'fine',
    });
  });

  it('sends an edit of a gate as its text, and of a tool call as its arguments, which must be a JSON object', () => {
    expect(decideArguments(gate, { decision: 'edit', text: 'Better.', reason: '' })).toMatchObject({ text: 'Better.' });
    expect(decideArguments(toolCall, { decision: 'edit', text: '{"path": "b.md"}', reason: '' })).toMatchObject({
      arguments: { path: 'b.md' },
    });
    expect(decideArguments(toolCall, { decision: 'edit', text: '{"path": ', reason: '' })).toBe(
      'The arguments are not JSON.',
    );
    expect(decideArguments(toolCall, { decision: 'edit', text: '["b.md"]', reason: '' })).toBe(
      'The arguments must be a JSON object.',
    );
  });

  it('asks for the text of an edit and an answer, and for the reason of a rejection, which it sends as the reason', () => {
    expect(decideArguments(gate, { decision: 'edit', text: ' ', reason: '' })).toBe('Write the new text.');
    expect(decideArguments(toolCall, { decision: 'respond', text: '', reason: '' })).toBe('Write your answer.');
    expect(decideArguments(gate, { decision: 'respond', text: 'Say more.', reason: '' })).toMatchObject({
      decision: 'respond',
      text: 'Say more.',
    });
    expect(decideArguments(gate, { decision: 'reject', text: '', reason: '' })).toBe('Say why you reject it.');
    expect(decideArguments(gate, { decision: 'reject', text: ' wrong file ', reason: '' })).toMatchObject({
      decision: 'reject',
      reason: 'wrong file',
    });
  });
});

describe('editedPhase', () => {
  it('is the last phase the gate shows, with its output, even when the output holds markdown headings', () => {
    const phases = [
      { id: 'intake', output: 'The change renames the loader.' },
      { id: 'analysis', output: '## Must fix\nNothing.' },
      { id: 'output', output: '' },
    ];
    expect(editedPhase(gate, phases)).toEqual({ node: 'analysis', text: '## Must fix\nNothing.' });
  });

  it('is none when no phase of the run ends the gated text', () => {
    expect(editedPhase(gate, [{ id: 'analysis', output: 'Another text.' }])).toBeNull();
    expect(editedPhase(gate, [])).toBeNull();
  });
});

describe('outcomeOf', () => {
  it('says what came of the decision, or the error text the tool answered', () => {
    expect(outcomeOf('edit', { structuredContent: { status: 'running' } })).toEqual({
      ok: true,
      text: 'Approved with your edit: the run goes on.',
    });
    expect(
      outcomeOf('approve', {
        structuredContent: { status: 'waiting_approval', approvals_needed: 2, approvals_given: 1 },
      }),
    ).toEqual({ ok: true, text: 'Approved: 1 of 2 approvals given; the run waits for the others.' });
    expect(
      outcomeOf('reject', { isError: true, content: [{ type: 'text', text: 'no run of thread x waits at gate' }] }),
    ).toEqual({ ok: false, text: 'no run of thread x waits at gate' });
  });
});
