import { describe, expect, it } from 'vitest';
import { shownOf } from './stops';

const waiting = {
  kind: 'gate',
  stop_id: 'run-1:1',
  round: 1,
  gate: 'gate',
  question: 'Publish this review?',
  content: '## analysis\nFine.',
  decide_role: 'admin',
  studio_url: 'http://127.0.0.1:8000/ui?thread=t-1',
};

describe('shownOf', () => {
  it("reads a run's result as its one stop, with the run's phases", () => {
    const shown = shownOf({
      structuredContent: {
        run_id: 'run-1',
        thread_id: 't-1',
        agent: 'review',
        status: 'waiting_approval',
        phases: [{ id: 'analysis', status: 'completed', output: 'Fine.' }],
        waiting,
      },
    });
    expect(shown).toEqual({
      stops: [
        expect.objectContaining({
          kind: 'gate',
          runId: 'run-1',
          threadId: 't-1',
          round: 1,
          gate: 'gate',
          decideRole: 'admin',
          content: '## analysis\nFine.',
          phases: [{ id: 'analysis', output: 'Fine.' }],
        }),
      ],
    });
  });

  it("reads list_approvals' items as stops, a tool call with its arguments, and leaves out what is not one", () => {
    const call = { ...waiting, kind: 'tool_call', call_id: 'c-1', tool: 'mock.append', arguments: { line: 'x' } };
    const item = { run_id: 'run-2', thread_id: 't-2', agent: 'review', project: 'Default project' };
    const shown = shownOf({
      structuredContent: {
        approvals: [
          { ...call, ...item, approvals_needed: 2, approvals_given: 1, waiting_since: '2026-01-01T10:00:00Z' },
          { ...waiting, kind: 'tool_call', ...item },
          'not a stop',
        ],
      },
    });
    expect(shown).toEqual({
      stops: [
        expect.objectContaining({
          kind: 'tool_call',
          callId: 'c-1',
          tool: 'mock.append',
          arguments: { line: 'x' },
          project: 'Default project',
          approvals: { needed: 2, given: 1 },
          waitingSince: '2026-01-01T10:00:00Z',
        }),
      ],
    });
    expect(shownOf({ structuredContent: { approvals: [] } })).toEqual({ notice: 'Nothing waits for your decision.' });
  });

  it('says when a run waits for nobody, and shows an error result as its text', () => {
    expect(
      shownOf({ structuredContent: { run_id: 'run-1', agent: 'review', status: 'completed', waiting: null } }),
    ).toEqual({ notice: 'The run of review has completed: nothing waits for a decision.' });
    expect(shownOf({ isError: true, content: [{ type: 'text', text: 'run x not found' }] })).toEqual({
      notice: 'run x not found',
    });
    expect(shownOf({ structuredContent: { agents: [] } })).toEqual({ notice: 'This result names no approval.' });
  });

  it('sends a stop of a kind it does not know to the studio', () => {
    const elsewhere = { notice: 'What waits here cannot be decided on this card: open it in the studio.' };
    const question = { ...waiting, kind: 'question' };
    expect(shownOf({ structuredContent: { run_id: 'run-1', thread_id: 't-1', waiting: question } })).toEqual(elsewhere);
    expect(shownOf({ structuredContent: { approvals: [{ ...question, run_id: 'run-1', thread_id: 't-1' }] } })).toEqual(
      elsewhere,
    );
  });
});
