import type { RunEvent, RunEventOf } from '@contracts/events';
import type { GateDecisionRecord } from '@contracts/runs';
import type { PendingToolCall } from '@contracts/tools';
import { describe, expect, it } from 'vitest';
import { applyEvent, emptyView, isStuck, recordedTranscript, STUCK_AFTER_MS, type RunView } from './run-view';
import { waitingQuestions } from './tool-events';

const RUN = '11111111-1111-4111-8111-111111111111';
const THREAD = '22222222-2222-4222-8222-222222222222';
const callId = (place: number, turn = 0) => `${RUN}:intake:1:${turn}:${place}`;

function fold(events: RunEvent[], view: RunView = emptyView()): RunView {
  events.forEach((event, i) => applyEvent(view, event, view.lastEventId + i + 1));
  return view;
}

const called = (
  place: number,
  args: Record<string, unknown>,
  policy: RunEventOf<'tool_call'>['policy'] = 'ask',
): RunEventOf<'tool_call'> => ({
  type: 'tool_call',
  node: 'intake',
  call_id: callId(place),
  tool: 'project.write_file',
  server: 'project',
  arguments: args,
  arguments_sha256: `sha-${place}`,
  policy,
});

const pending = (place: number, args: Record<string, unknown>): PendingToolCall => ({
  call_id: callId(place),
  tool: 'project.write_file',
  server: 'project',
  description: 'Writes a text file of the project.',
  arguments: args,
  canonical_arguments: JSON.stringify(args),
  arguments_sha256: `sha-${place}`,
  input_schema: { type: 'object' },
  annotations: { read_only: false, idempotent: true, destructive: true },
  interrupted: false,
  attempts: 0,
});

const waiting = (place: number, args: Record<string, unknown>): RunEventOf<'tool_waiting'> => ({
  type: 'tool_waiting',
  node: 'intake',
  question: 'Run project.write_file?',
  required_context: [],
  context: { 'project.write_file': JSON.stringify(args, null, 2) },
  waiting_since: '2026-01-01T12:00:00.000Z',
  tool_call: pending(place, args),
});

const decided = (
  place: number,
  decision: RunEventOf<'tool_decided'>['decision'],
  reason: string | null = null,
): RunEventOf<'tool_decided'> => ({
  type: 'tool_decided',
  node: 'intake',
  call_id: callId(place),
  decision,
  reason,
  deciders: ['Ada'],
});

const answered = (place: number, text: string, isError = false): RunEventOf<'tool_result'> => ({
  type: 'tool_result',
  node: 'intake',
  call_id: callId(place),
  tool: 'project.write_file',
  is_error: isError,
  text,
});

const start: RunEvent[] = [
  { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'tool-writer', model: 'm' },
  { type: 'node_enter', node: 'intake' },
];

describe('tool calls in the run view', () => {
  it('shows each call in its phase, in order, with what it answered; a read that asks nobody just runs', () => {
    const view = fold([
      ...start,
      { type: 'token', node: 'intake', text: 'Let me look. ' },
      called(0, { path: 'README.md' }, 'allow'),
      answered(0, '# Demo'),
      { type: 'token', node: 'intake', text: 'The project ' },
      { type: 'token', node: 'intake', text: 'is a demo.' },
    ]);
    expect(view.toolCalls.intake).toEqual([
      {
        call_id: callId(0),
        node: 'intake',
        tool: 'project.write_file',
        server: 'project',
        arguments: { path: 'README.md' },
        policy: 'allow',
        status: 'allowed',
        decision: null,
        result: '# Demo',
        is_error: false,
        questions: [],
      },
    ]);
    // The answer after the call is a part of its own, after the call: never appended to the text before it.
    expect(view.transcript.map((entry) => entry.toolCall?.call_id ?? entry.text)).toEqual([
      'Let me look. ',
      callId(0),
      'The project is a demo.',
    ]);
    expect(view.transcript[1]!.toolCall).toBe(view.toolCalls.intake![0]);
    expect(view.phases.intake).toBe('active');
  });

  it('waits at a call that asks as at a gate, and goes on once it is decided, whatever the decision', () => {
    const view = fold([...start, called(0, { path: 'notes.md', content: 'hello' }), waiting(0, { path: 'notes.md' })]);
    expect(view.status).toBe('waiting_approval');
    expect(view.phases.intake).toBe('tool_waiting');
    expect(view.pendingGate?.tool_call?.call_id).toBe(callId(0));
    expect(view.approvals).toEqual({ needed: 1, given: 0, by: [] });
    expect(view.resumable).toBe(true);
    expect(view.toolCalls.intake!.map((call) => call.status)).toEqual(['waiting']);

    fold([decided(0, 'edit', 'a better name'), answered(0, 'wrote notes.md')], view);
    expect(view).toMatchObject({ status: 'running', pendingGate: null, approvals: null, resumable: false });
    expect(view.phases.intake).toBe('active');
    expect(view.toolCalls.intake![0]).toMatchObject({
      status: 'edited',
      decision: { kind: 'edit', reason: 'a better name', deciders: ['Ada'] },
      result: 'wrote notes.md',
      is_error: false,
    });
  });

  it('decides two calls of one turn one after the other: the first approved, the second rejected', () => {
    const view = fold([
      ...start,
      called(0, { path: 'one.md', content: '1' }),
      waiting(0, { path: 'one.md', content: '1' }),
      decided(0, 'approve'),
      answered(0, 'wrote one.md'),
      called(1, { path: 'two.md', content: '2' }),
      waiting(1, { path: 'two.md', content: '2' }),
    ]);
    expect(view.pendingGate?.tool_call?.call_id).toBe(callId(1));
    expect(view.toolCalls.intake!.map((call) => call.status)).toEqual(['approved', 'waiting']);

    fold(
      [
        decided(1, 'reject', 'not that file'),
        answered(1, 'Not run. A person rejected this call: not that file', true),
        { type: 'token', node: 'intake', text: 'Wrote one.' },
        { type: 'node_exit', node: 'intake', status: 'completed' },
      ],
      view,
    );
    expect(view.toolCalls.intake!.map(({ status, result, is_error }) => ({ status, result, is_error }))).toEqual([
      { status: 'approved', result: 'wrote one.md', is_error: false },
      { status: 'rejected', result: 'Not run. A person rejected this call: not that file', is_error: true },
    ]);
    expect(view.transcript.map((entry) => entry.toolCall?.status ?? entry.text)).toEqual([
      'approved',
      'rejected',
      'Wrote one.',
    ]);
    expect(view.phases.intake).toBe('completed');
  });

  it('takes the call a run waits at from its pending gate when no tool_call told it (a run read from its rows)', () => {
    const view = fold([...start, waiting(0, { path: 'notes.md' })]);
    expect(view.toolCalls.intake).toEqual([
      expect.objectContaining({
        call_id: callId(0),
        status: 'waiting',
        policy: 'ask',
        arguments: { path: 'notes.md' },
      }),
    ]);
    expect(view.transcript).toHaveLength(1);
  });

  it('a call denied is shown as not run, with why', () => {
    const view = fold([
      ...start,
      { ...called(0, {}, 'deny'), tool: 'project__git_log', server: 'project' },
      answered(0, 'Not run: no tool named "project__git_log" is offered to this phase.', true),
    ]);
    expect(view.toolCalls.intake![0]).toMatchObject({ status: 'denied', is_error: true });
  });

  it('keeps the calls of a phase another server resumes: they are replayed, not sent again', () => {
    const view = fold([
      ...start,
      { type: 'token', node: 'intake', text: 'Reading. ' },
      called(0, { path: 'README.md' }, 'allow'),
      answered(0, '# Demo'),
      { type: 'token', node: 'intake', text: 'half an ans' },
      { type: 'run_resumed', run_id: RUN, attempt: 2, node: 'intake' },
      { type: 'token', node: 'intake', text: 'The whole answer.' },
    ]);
    expect(view.transcript.map((entry) => entry.toolCall?.result ?? entry.text)).toEqual([
      'Reading. ',
      '# Demo',
      'The whole answer.',
    ]);
    expect(view.toolCalls.intake).toHaveLength(1);
  });

  it('a run cancelled while a call waits ends the phase with it', () => {
    const view = fold([
      ...start,
      called(0, { path: 'a.md' }),
      waiting(0, { path: 'a.md' }),
      { type: 'run_cancelled', run_id: RUN, reason: 'not now' },
    ]);
    expect(view.phases.intake).toBe('cancelled');
    expect(view.pendingGate).toBeNull();
  });

  it('leaves the records of decisions on tool calls out of the gates: the calls show them', () => {
    const view = fold([...start, called(0, { path: 'a.md' }), waiting(0, { path: 'a.md' }), decided(0, 'approve')]);
    const record: GateDecisionRecord = {
      id: '1',
      run_id: RUN,
      thread_id: THREAD,
      gate: 'intake',
      decision: 'approve',
      decided_by: { id: 'u1', name: 'Ada' },
      role: 'member',
      reason: null,
      edits: null,
      response: null,
      outcome: null,
      route_to: null,
      tool_call_id: callId(0),
      arguments: '{"path":"a.md"}',
      arguments_sha256: 'sha-0',
      agent_version: null,
      policy_source: null,
      via: null,
      decided_at: '2026-01-01T12:00:01.000Z',
      imported: false,
    };
    view.decisions = [record];
    expect(recordedTranscript(view)).toEqual(view.transcript);
    expect(view.transcript.some((entry) => entry.decision)).toBe(false);
  });

  it("keeps a tool server's question with its call while the run goes on running, then how it was answered", () => {
    const asked: RunEventOf<'tool_question'> = {
      type: 'tool_question',
      node: 'intake',
      call_id: callId(0),
      tool: 'asker.ask_release',
      server: 'asker',
      mode: 'form',
      message: 'Which name?',
      requested_schema: { type: 'object', properties: { name: { type: 'string' } } },
      url_host: null,
      expires_at: '2026-01-01T13:00:00.000Z',
    };
    const view = fold([...start, called(0, {}, 'allow'), asked]);
    // The run waits for nobody's approval: it runs, and its phase with it.
    expect(view).toMatchObject({ status: 'running', pendingGate: null, stop: null });
    expect(view.phases.intake).toBe('active');
    const question = view.toolCalls.intake![0]!.questions[0]!;
    // Its stop is named by the run and the event that asked.
    expect(question).toMatchObject({ stopId: `${RUN}:${view.lastEventId}`, mode: 'form', state: 'asked' });
    expect(waitingQuestions(view).map((waiting) => waiting.question)).toEqual([question]);

    fold(
      [
        {
          type: 'tool_question_answered',
          node: 'intake',
          call_id: callId(0),
          stop_id: question.stopId,
          action: 'accept',
          by: 'Ann',
        },
      ],
      view,
    );
    expect(question).toMatchObject({ state: 'accept', by: 'Ann' });
    expect(waitingQuestions(view)).toEqual([]);
  });

  it('is never stuck while a question waits, and counts its two minutes again from the answer', () => {
    const startedAt = new Date(Date.now() - 10 * 60_000).toISOString();
    const asked: RunEventOf<'tool_question'> = {
      type: 'tool_question',
      node: 'intake',
      call_id: callId(0),
      tool: 'asker.connect',
      server: 'asker',
      mode: 'url',
      message: 'Connect your account.',
      requested_schema: null,
      url_host: 'accounts.example.com',
      expires_at: '2026-01-01T13:00:00.000Z',
    };
    const view = fold([...start, called(0, {}, 'allow'), asked]);
    const stopId = `${RUN}:${view.lastEventId}`;
    view.startedAt = startedAt;
    expect(isStuck(view)).toBe(false);
    const answeredAt = Date.now();
    applyEvent(
      view,
      {
        type: 'tool_question_answered',
        node: 'intake',
        call_id: callId(0),
        stop_id: stopId,
        action: 'expired',
        by: null,
      },
      5,
      answeredAt,
    );
    expect(isStuck(view, answeredAt + 1000)).toBe(false);
    expect(isStuck(view, answeredAt + STUCK_AFTER_MS + 1)).toBe(true);
  });

  it('withdraws a question nobody answered when its call is cut off: the run taken over, or ended', () => {
    const asked = (node: string): RunEventOf<'tool_question'> => ({
      type: 'tool_question',
      node,
      call_id: callId(0),
      tool: 'asker.ask_release',
      server: 'asker',
      mode: 'form',
      message: 'Which name?',
      requested_schema: null,
      url_host: null,
      expires_at: '2026-01-01T13:00:00.000Z',
    });
    const view = fold([...start, called(0, {}, 'allow'), asked('intake')]);
    fold([{ type: 'run_resumed', run_id: RUN, node: 'intake', attempt: 2 }], view);
    expect(view.toolCalls.intake![0]!.questions[0]!.state).toBe('withdrawn');

    const ended = fold([
      ...start,
      called(0, {}, 'allow'),
      asked('intake'),
      { type: 'run_cancelled', run_id: RUN, reason: null },
    ]);
    expect(ended.toolCalls.intake![0]!.questions[0]!.state).toBe('withdrawn');

    // The server stopped waiting: the event says so.
    const dropped = fold([...start, called(0, {}, 'allow'), asked('intake')]);
    const stopId = dropped.toolCalls.intake![0]!.questions[0]!.stopId;
    fold(
      [
        {
          type: 'tool_question_answered',
          node: 'intake',
          call_id: callId(0),
          stop_id: stopId,
          action: 'withdrawn',
          by: null,
        },
      ],
      dropped,
    );
    expect(dropped.toolCalls.intake![0]!.questions[0]!.state).toBe('withdrawn');
  });
});
