import type { RunEvent } from '@contracts/events';
import type { GateDecisionRecord, RunDetail, RunNode } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import { eventsFromRows } from './events-from-rows';
import { applyEvent, recordedTranscript, runView, settle, type RunView } from './run-view';

const RUN = '11111111-1111-4111-8111-111111111111';
const THREAD = '22222222-2222-4222-8222-222222222222';
const GATE = { question: 'Publish?', required_context: ['analysis'] };
const RULE = { condition: 'always', match: '', target: 'gate', priority: 1 } as const;

const row = (node_id: string, status: RunNode['status'], enteredS: number, extra: Partial<RunNode> = {}): RunNode => ({
  node_id,
  status,
  output: '',
  entered_at: enteredS,
  exited_at: enteredS + 1,
  first_token_at: null,
  queue_wait_ms: 20,
  prompt_tokens: 100,
  output_tokens: 10,
  warnings: [],
  thinking: null,
  ...extra,
});

const record = (
  decision: GateDecisionRecord['decision'],
  atS: number,
  name: string,
  extra: Partial<GateDecisionRecord> = {},
): GateDecisionRecord => ({
  id: String(atS),
  run_id: RUN,
  thread_id: THREAD,
  gate: 'gate',
  decision,
  decided_by: { id: name, name },
  role: 'member',
  reason: null,
  edits: null,
  response: null,
  outcome: null,
  route_to: null,
  tool_call_id: null,
  arguments: null,
  arguments_sha256: null,
  agent_version: null,
  policy_source: null,
  via: null,
  decided_at: new Date(atS * 1000).toISOString(),
  imported: false,
  ...extra,
});

const detail = (extra: Partial<RunDetail>): RunDetail => ({
  id: RUN,
  forked_from: null,
  comparison_of: null,
  stop: null,
  sent_to: [],
  questions: [],
  agent_version: null,
  thread_id: THREAD,
  agent: 'change-review',
  model: 'm',
  status: 'completed',
  message: 'Review this',
  project_path: null,
  output: null,
  error_detail: null,
  end_reason: null,
  started_at: new Date(1000_000).toISOString(),
  finished_at: null,
  routes: [],
  pending_gate: null,
  resumable: false,
  decisions: [],
  approvals: null,
  usage: null,
  nodes: [],
  ...extra,
});

/**
 * A stored run as the studio shows it from the given events: folded onto its row, settled by its record, with the
 * transcript as recorded (as the transcript pane shows it).
 */
function shown(stored: RunDetail, events: RunEvent[]): RunView {
  const view = runView(stored);
  events.forEach((event, i) => applyEvent(view, event, i + 1));
  settle(view, stored);
  // Which event ids the view has seen is the stream's business, not what anyone sees.
  return { ...view, transcript: recordedTranscript(view), lastEventId: 0 };
}

/** The start of a change-review run: intake (with reasoning and a warning), analysis, a route, the gate. */
const untilTheGate: RunEvent[] = [
  { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'change-review', model: 'm' },
  { type: 'node_enter', node: 'intake' },
  { type: 'thinking', node: 'intake', text: 'Small diff.' },
  { type: 'token', node: 'intake', text: 'Intake.' },
  { type: 'node_warning', node: 'intake', code: 'answer_cut', message: 'stopped at its length' },
  { type: 'node_exit', node: 'intake', status: 'completed' },
  { type: 'node_enter', node: 'analysis' },
  { type: 'token', node: 'analysis', text: 'First.' },
  { type: 'node_exit', node: 'analysis', status: 'completed' },
  { type: 'route_matched', from: 'analysis', to: 'gate', rule: RULE },
  { type: 'node_enter', node: 'gate' },
];
const rowsUntilTheGate = [
  row('intake', 'completed', 1000, {
    output: 'Intake.',
    thinking: 'Small diff.',
    warnings: [{ code: 'answer_cut', message: 'stopped at its length' }],
  }),
  row('analysis', 'completed', 1002, { output: 'First.' }),
];
const routes = [{ from: 'analysis', to: 'gate', rule: RULE, at: 1003.5 }];

describe('a run whose events were pruned', () => {
  it('looks as its events showed it: sent back once, approved by two people, completed', () => {
    const stored = detail({
      status: 'completed',
      output: 'Published.',
      routes,
      nodes: [
        ...rowsUntilTheGate,
        row('gate', 'completed', 1004, { exited_at: 1010 }),
        row('analysis', 'completed', 1011, { output: 'Second.' }),
        row('gate', 'approved', 1013, { exited_at: 1020 }),
        row('output', 'completed', 1021, { output: 'Published.' }),
      ],
      decisions: [
        record('respond', 1010, 'Ben', { response: 'More on tests.', route_to: 'analysis' }),
        record('approve', 1015, 'Ada'),
        record('approve', 1020, 'Ben', { role: 'owner' }),
      ],
    });
    const live: RunEvent[] = [
      ...untilTheGate,
      { type: 'gate_waiting', node: 'gate', ...GATE, context: { analysis: 'First.' } },
      {
        type: 'gate_responded',
        node: 'gate',
        to: 'analysis',
        response: 'More on tests.',
        reason: null,
        deciders: ['Ben'],
      },
      { type: 'node_enter', node: 'analysis' },
      { type: 'token', node: 'analysis', text: 'Second.' },
      { type: 'node_exit', node: 'analysis', status: 'completed' },
      { type: 'node_enter', node: 'gate' },
      { type: 'gate_waiting', node: 'gate', ...GATE, context: { analysis: 'Second.' }, approvals_needed: 2 },
      { type: 'gate_approved', node: 'gate', reason: null, deciders: ['Ada', 'Ben'] },
      { type: 'node_enter', node: 'output' },
      { type: 'token', node: 'output', text: 'Published.' },
      { type: 'node_exit', node: 'output', status: 'completed' },
      { type: 'run_done', run_id: RUN, output: 'Published.' },
    ];
    const fromRows = shown(stored, eventsFromRows(stored));
    expect(fromRows).toEqual(shown(stored, live));
    expect(fromRows).toMatchObject({
      status: 'completed',
      phases: { intake: 'completed', analysis: 'completed', gate: 'gate_passed', output: 'completed' },
      trail: ['intake', 'analysis', 'gate', 'analysis', 'gate', 'output'],
      returns: [{ from: 'gate', to: 'analysis' }],
      routes: [{ from: 'analysis', to: 'gate' }],
      warnings: ['Answer cut for intake: stopped at its length.'],
    });
    expect(
      fromRows.transcript.map((entry) =>
        entry.decision ? `${entry.decision.kind} ${entry.decision.deciders}` : entry.text,
      ),
    ).toEqual(['Intake.', 'First.', 'respond Ben', 'Second.', 'approve Ada', 'approve Ben', 'Published.']);
    expect(fromRows.transcript[0]!.thinking).toBe('Small diff.');
    expect(fromRows.figures.output).toMatchObject({ enteredAt: 1021_000, exitedAt: 1022_000, outputTokens: 10 });
  });

  it('waits at its gate with the approvals so far, none of them in the transcript yet', () => {
    const pending = { node: 'gate', ...GATE, context: { analysis: 'First.' }, approvals_needed: 2 };
    const approvals = { needed: 2, given: 1, by: [{ id: 'Ada', name: 'Ada', at: new Date(1010_000).toISOString() }] };
    const stored = detail({
      status: 'waiting_approval',
      routes,
      pending_gate: pending,
      approvals,
      resumable: true,
      nodes: [...rowsUntilTheGate, row('gate', 'waiting_approval', 1004, { exited_at: null })],
      decisions: [record('approve', 1010, 'Ada')],
    });
    const fromRows = shown(stored, eventsFromRows(stored));
    expect(fromRows).toEqual(shown(stored, [...untilTheGate, { type: 'gate_waiting', ...pending }]));
    expect(fromRows).toMatchObject({ status: 'waiting_approval', pendingGate: pending, approvals, resumable: true });
    expect(fromRows.phases.gate).toBe('gate_waiting');
    expect(fromRows.transcript.some((entry) => entry.decision)).toBe(false);
  });

  it('was cancelled at its gate, or rejected when the gate expired, as its stream ended', () => {
    const cancelled = detail({
      status: 'cancelled',
      end_reason: 'not needed',
      routes,
      nodes: [...rowsUntilTheGate, row('gate', 'cancelled', 1004)],
    });
    const atTheGate: RunEvent = { type: 'gate_waiting', node: 'gate', ...GATE, context: { analysis: 'First.' } };
    expect(shown(cancelled, eventsFromRows(cancelled))).toEqual(shown(cancelled, [...untilTheGate, atTheGate]));
    expect(shown(cancelled, eventsFromRows(cancelled)).phases.gate).toBe('cancelled');

    const expired = detail({
      status: 'rejected',
      routes,
      nodes: [...rowsUntilTheGate, row('gate', 'rejected', 1004, { exited_at: 1800 })],
      decisions: [record('expire', 1800, 'expiry', { decided_by: { id: null, name: 'expiry' }, outcome: 'reject' })],
    });
    const live: RunEvent[] = [
      ...untilTheGate,
      atTheGate,
      { type: 'gate_expired', node: 'gate', outcome: 'reject', to: null },
      { type: 'run_rejected', run_id: RUN, reason: null },
    ];
    expect(shown(expired, eventsFromRows(expired))).toEqual(shown(expired, live));
    expect(shown(expired, eventsFromRows(expired)).phases.gate).toBe('gate_expired');
  });

  it('waits at a tool call of its first phase: the call shows waiting there, its earlier decisions are not gates', () => {
    const callId = (place: number) => `${RUN}:intake:1:0:${place}`;
    const pending = {
      node: 'intake',
      question: 'Run project.write_file?',
      required_context: [],
      context: { 'project.write_file': '{"path":"two.md"}' },
      tool_call: {
        call_id: callId(1),
        tool: 'project.write_file',
        server: 'project',
        description: 'Writes a text file of the project.',
        arguments: { path: 'two.md', content: '2' },
        canonical_arguments: '{"content":"2","path":"two.md"}',
        arguments_sha256: 'sha-1',
        input_schema: { type: 'object' },
        annotations: { read_only: false, idempotent: true, destructive: true },
        interrupted: false,
        attempts: 0,
      },
    };
    const stored = detail({
      status: 'waiting_approval',
      pending_gate: pending,
      approvals: { needed: 1, given: 0, by: [] },
      resumable: true,
      nodes: [row('intake', 'waiting_approval', 1000, { exited_at: null })],
      // The first call of the turn was approved a moment before the second asked.
      decisions: [record('approve', 999, 'Ada', { gate: 'intake', tool_call_id: callId(0), arguments: '{}' })],
    });
    const fromRows = shown(stored, eventsFromRows(stored));
    expect(fromRows).toMatchObject({ status: 'waiting_approval', pendingGate: pending, resumable: true });
    expect(fromRows.phases).toEqual({ intake: 'tool_waiting' });
    expect(fromRows.toolCalls.intake).toEqual([
      expect.objectContaining({ call_id: callId(1), status: 'waiting', arguments: { path: 'two.md', content: '2' } }),
    ]);
    expect(fromRows.transcript.map((entry) => entry.toolCall?.call_id ?? entry.decision?.kind)).toEqual([callId(1)]);
  });

  it('failed in a phase, with the exact error', () => {
    const failed = detail({
      status: 'error',
      error_detail: 'ResponseError: model crashed',
      nodes: [row('dispatch', 'error', 1000, { output: 'part' })],
    });
    const view = shown(failed, eventsFromRows(failed));
    expect(view).toMatchObject({ status: 'error', errorDetail: 'ResponseError: model crashed' });
    expect(view.phases.dispatch).toBe('error');
    expect(view.transcript).toEqual([{ node: 'dispatch', text: 'part' }]);
  });
});
