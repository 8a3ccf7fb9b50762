import type { RunEvent } from '@contracts/events';
import type { GateDecisionRecord, RunDetail, RunNode } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import { applyEvent, emptyView, isStuck, viewFromDetail, STUCK_AFTER_MS } from './run-view';

const RUN = '11111111-1111-4111-8111-111111111111';
const THREAD = '22222222-2222-4222-8222-222222222222';

function fold(events: RunEvent[]) {
  const view = emptyView();
  events.forEach((event, i) => applyEvent(view, event, i + 1));
  return view;
}

describe('the run view', () => {
  it('follows a run to its gate: phase states, transcript, pending gate', () => {
    const view = fold([
      { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'change-review', model: 'm' },
      { type: 'node_enter', node: 'intake' },
      { type: 'token', node: 'intake', text: 'Hel' },
      { type: 'token', node: 'intake', text: 'lo' },
      { type: 'node_exit', node: 'intake', status: 'completed' },
      { type: 'node_enter', node: 'gate' },
      {
        type: 'gate_waiting',
        node: 'gate',
        question: 'Ship it?',
        required_context: ['intake'],
        context: { intake: 'Hello' },
      },
    ]);
    expect(view.status).toBe('waiting_approval');
    expect(view.phases).toEqual({ intake: 'completed', gate: 'gate_waiting' });
    expect(view.transcript).toEqual([{ node: 'intake', text: 'Hello' }]);
    expect(view.pendingGate?.question).toBe('Ship it?');
    expect(view.trail).toEqual(['intake', 'gate']);
    expect(view.lastEventId).toBe(7);
  });

  it('shows an approved gate as passed, a route and its flashing target, and the final output', () => {
    const view = fold([
      { type: 'gate_approved', node: 'gate', reason: null },
      {
        type: 'route_matched',
        from: 'analysis',
        to: 'output',
        rule: { condition: 'always', match: '', target: 'output', priority: 1 },
      },
      { type: 'run_done', run_id: RUN, output: 'done' },
    ]);
    expect(view.phases.gate).toBe('gate_passed');
    expect(view.routes).toEqual([{ from: 'analysis', to: 'output' }]);
    expect(view.flash).toBe('output');
    expect(view).toMatchObject({ status: 'completed', output: 'done' });
  });

  it('marks the active phase errored and keeps the exact error text', () => {
    const view = fold([
      { type: 'node_enter', node: 'dispatch' },
      { type: 'run_error', run_id: RUN, error_detail: 'ConnectionRefusedError: cannot reach the local model runtime' },
    ]);
    expect(view.phases.dispatch).toBe('error');
    expect(view.errorDetail).toBe('ConnectionRefusedError: cannot reach the local model runtime');
  });

  it('keeps the reason of a rejection or a cancel, live and from a stored run', () => {
    const rejected = fold([
      { type: 'gate_rejected', node: 'gate', reason: 'not safe' },
      { type: 'run_rejected', run_id: RUN, reason: 'not safe' },
    ]);
    expect(rejected).toMatchObject({ status: 'rejected', endReason: 'not safe' });
    const cancelled = fold([
      { type: 'node_enter', node: 'dispatch' },
      { type: 'run_cancelled', run_id: RUN, reason: 'too slow' },
    ]);
    expect(cancelled).toMatchObject({ status: 'cancelled', endReason: 'too slow' });
    expect(fold([{ type: 'run_cancelled', run_id: RUN, reason: null }]).endReason).toBeNull();
    const stored = viewFromDetail({
      id: RUN,
      thread_id: THREAD,
      agent: 'repo-summary',
      model: 'm',
      status: 'cancelled',
      message: 'hi',
      project_path: null,
      output: null,
      error_detail: null,
      end_reason: 'asked elsewhere',
      started_at: new Date().toISOString(),
      finished_at: new Date().toISOString(),
      routes: [],
      pending_gate: null,
      resumable: false,
      decisions: [],
      approvals: null,
      nodes: [],
    });
    expect(stored).toMatchObject({ status: 'cancelled', endReason: 'asked elsewhere' });
  });

  it('restores a stored run and tells when a running one appears stuck', () => {
    const started = new Date(Date.now() - STUCK_AFTER_MS - 1000).toISOString();
    const view = viewFromDetail({
      id: RUN,
      thread_id: THREAD,
      agent: 'repo-summary',
      model: 'm',
      status: 'running',
      message: 'hi',
      project_path: null,
      output: null,
      error_detail: null,
      end_reason: null,
      started_at: started,
      finished_at: null,
      routes: [],
      pending_gate: null,
      resumable: false,
      decisions: [],
      approvals: null,
      nodes: [
        {
          node_id: 'dispatch',
          status: 'running',
          output: 'partial',
          entered_at: 1,
          exited_at: null,
          queue_wait_ms: null,
          prompt_tokens: null,
          output_tokens: null,
          warnings: [],
          thinking: null,
        },
      ],
    });
    expect(view.phases.dispatch).toBe('active');
    expect(view.transcript).toEqual([{ node: 'dispatch', text: 'partial' }]);
    expect(isStuck(view)).toBe(true);
    expect(isStuck({ ...view, status: 'completed' })).toBe(false);
  });

  it('calls a run stuck exactly when it is still running more than two minutes after it started', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    const startedAgo = (ms: number) => new Date(now - ms).toISOString();
    // A live stream that is busy right now changes nothing: the view has no notion of stream activity.
    const live = fold([
      { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'repo-summary', model: 'm' },
      { type: 'node_enter', node: 'dispatch' },
      { type: 'token', node: 'dispatch', text: 'busy' },
    ]);
    expect(live.status).toBe('running');
    expect(isStuck({ ...live, startedAt: startedAgo(STUCK_AFTER_MS + 1) }, now)).toBe(true);
    expect(isStuck({ ...live, startedAt: startedAgo(3 * 60_000) }, now)).toBe(true);
    expect(isStuck({ ...live, startedAt: startedAgo(STUCK_AFTER_MS) }, now)).toBe(false);
    expect(isStuck({ ...live, startedAt: startedAgo(10_000) }, now)).toBe(false);
    expect(isStuck({ ...live, startedAt: null }, now)).toBe(false);
    for (const status of ['waiting_approval', 'completed', 'error', 'cancelled', 'rejected', 'idle'] as const)
      expect(isStuck({ ...live, status, startedAt: startedAgo(3 * 60_000) }, now)).toBe(false);
  });
});

const waiting = (extra: Partial<RunEvent & { type: 'gate_waiting' }> = {}): RunEvent => ({
  type: 'gate_waiting',
  node: 'gate',
  question: 'Publish?',
  required_context: ['analysis'],
  context: { analysis: 'The first analysis.' },
  ...extra,
});

/** A change-review run up to its gate: intake and analysis answered, the gate waiting. */
const toTheGate: RunEvent[] = [
  { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'change-review', model: 'm' },
  { type: 'node_enter', node: 'intake' },
  { type: 'token', node: 'intake', text: 'Intake.' },
  { type: 'node_exit', node: 'intake', status: 'completed' },
  { type: 'node_enter', node: 'analysis' },
  { type: 'token', node: 'analysis', text: 'The first analysis.' },
  { type: 'node_exit', node: 'analysis', status: 'completed' },
  { type: 'node_enter', node: 'gate' },
  waiting(),
];

describe('decisions at a gate in the run view', () => {
  it('keeps the whole pending gate: who may decide, how many must approve, the deadline and what happens then', () => {
    const view = fold([
      waiting({
        decide_role: 'owner',
        approvals_needed: 2,
        waiting_since: '2026-01-01T12:00:00Z',
        expires_at: '2026-01-01T12:30:00Z',
        on_expiry: { after_s: 1800, action: 'reject', target: null },
      }),
    ]);
    expect(view.pendingGate).toEqual({
      node: 'gate',
      question: 'Publish?',
      required_context: ['analysis'],
      context: { analysis: 'The first analysis.' },
      decide_role: 'owner',
      approvals_needed: 2,
      waiting_since: '2026-01-01T12:00:00Z',
      expires_at: '2026-01-01T12:30:00Z',
      on_expiry: { after_s: 1800, action: 'reject', target: null },
    });
    expect(view.approvals).toEqual({ needed: 2, given: 0, by: [] });
    expect(fold([waiting()]).approvals).toEqual({ needed: 1, given: 0, by: [] });
  });

  it('an edit passes the gate and shows, between the outputs, who edited, why and the edited text', () => {
    const view = fold([
      ...toTheGate,
      {
        type: 'gate_edited',
        node: 'gate',
        reason: 'tone',
        edits: { analysis: 'The analysis, as edited.' },
        by: ['Ada'],
      },
      { type: 'node_enter', node: 'output' },
      { type: 'token', node: 'output', text: 'Published.' },
    ]);
    expect(view.phases.gate).toBe('gate_passed');
    expect(view).toMatchObject({ status: 'running', pendingGate: null, approvals: null });
    expect(view.transcript.map((entry) => entry.decision?.kind ?? entry.node)).toEqual([
      'intake',
      'analysis',
      'edit',
      'output',
    ]);
    expect(view.transcript[2]).toEqual({
      node: 'gate',
      text: '',
      decision: {
        kind: 'edit',
        gate: 'gate',
        by: ['Ada'],
        role: null,
        reason: 'tone',
        edits: { analysis: 'The analysis, as edited.' },
        response: null,
        to: null,
        outcome: null,
        at: null,
      },
    });
    // The phase's own output stays as the model wrote it; the note carries the edit.
    expect(view.transcript[1]!.text).toBe('The first analysis.');
  });

  it('a respond sends the flow back: the gate is marked, the phase before it works again, then the gate waits afresh', () => {
    const view = fold([
      ...toTheGate,
      {
        type: 'gate_responded',
        node: 'gate',
        to: 'analysis',
        response: 'Say more about the tests.',
        reason: null,
        by: 'Ben',
      },
    ]);
    expect(view.phases).toMatchObject({ gate: 'gate_returned', analysis: 'active', intake: 'completed' });
    expect(view).toMatchObject({ status: 'running', pendingGate: null });
    expect(view.returns).toEqual([{ from: 'gate', to: 'analysis' }]);
    expect(view.figures.analysis).toBeUndefined();
    expect(view.transcript.at(-1)!.decision).toMatchObject({
      kind: 'respond',
      by: ['Ben'],
      to: 'analysis',
      response: 'Say more about the tests.',
    });

    for (const [i, event] of (
      [
        { type: 'node_enter', node: 'analysis' },
        { type: 'token', node: 'analysis', text: 'The second analysis.' },
        { type: 'node_exit', node: 'analysis', status: 'completed' },
        { type: 'node_enter', node: 'gate' },
        waiting({ context: { analysis: 'The second analysis.' }, approvals_needed: 2 }),
      ] as RunEvent[]
    ).entries())
      applyEvent(view, event, 100 + i);
    expect(view.phases).toMatchObject({ gate: 'gate_waiting', analysis: 'completed' });
    expect(view.figures.analysis).toMatchObject({ source: 'live', streamedTokens: 1 });
    expect(view.pendingGate?.context).toEqual({ analysis: 'The second analysis.' });
    expect(view.approvals).toEqual({ needed: 2, given: 0, by: [] });
    // The second answer is an entry of its own, after the decision, not appended to the first.
    expect(view.transcript.map((entry) => entry.decision?.kind ?? entry.text)).toEqual([
      'Intake.',
      'The first analysis.',
      'respond',
      'The second analysis.',
    ]);
  });

  it('approvals and rejections say who decided; a rejection ends at the gate', () => {
    const approved = fold([...toTheGate, { type: 'gate_approved', node: 'gate', reason: null, by: ['Ada', 'Ben'] }]);
    expect(approved.phases.gate).toBe('gate_passed');
    expect(approved.transcript.at(-1)!.decision).toMatchObject({ kind: 'approve', by: ['Ada', 'Ben'] });
    const rejected = fold([
      ...toTheGate,
      { type: 'gate_rejected', node: 'gate', reason: 'not now', by: 'Ben' },
      { type: 'run_rejected', run_id: RUN, reason: 'not now' },
    ]);
    expect(rejected.phases.gate).toBe('gate_rejected');
    expect(rejected).toMatchObject({ status: 'rejected', pendingGate: null, approvals: null });
    expect(rejected.transcript.at(-1)!.decision).toMatchObject({ kind: 'reject', by: ['Ben'], reason: 'not now' });
    // An event without `by` (an older server) reads as a decision by nobody named.
    expect(fold([{ type: 'gate_approved', node: 'gate', reason: null }]).transcript[0]!.decision!.by).toEqual([]);
  });

  it('reads who decided from `deciders`, a list on every decision, before the deprecated `by`', () => {
    const decided = (event: RunEvent) => fold([...toTheGate, event]).transcript.at(-1)!.decision!.by;
    expect(decided({ type: 'gate_rejected', node: 'gate', reason: null, deciders: ['Ben'], by: 'Ben' })).toEqual([
      'Ben',
    ]);
    expect(
      decided({
        type: 'gate_responded',
        node: 'gate',
        to: 'analysis',
        response: 'More.',
        reason: null,
        deciders: ['Cy'],
      }),
    ).toEqual(['Cy']);
    expect(decided({ type: 'gate_approved', node: 'gate', reason: null, deciders: ['Ada', 'Ben'] })).toEqual([
      'Ada',
      'Ben',
    ]);
  });

  it('an expired gate is marked with what its deadline did; a route continues at its target', () => {
    const rejected = fold([...toTheGate, { type: 'gate_expired', node: 'gate', outcome: 'reject', to: null }]);
    expect(rejected.phases.gate).toBe('gate_expired');
    expect(rejected.status).toBe('waiting_approval');
    expect(rejected.pendingGate).toBeNull();
    const routed = fold([...toTheGate, { type: 'gate_expired', node: 'gate', outcome: 'route', to: 'cancelled' }]);
    expect(routed).toMatchObject({ status: 'running', flash: 'cancelled' });
    expect(routed.phases.gate).toBe('gate_expired');
    expect(routed.routes).toEqual([{ from: 'gate', to: 'cancelled' }]);
    expect(routed.transcript.at(-1)!.decision).toMatchObject({ kind: 'expire', outcome: 'route', to: 'cancelled' });
  });
});

describe('a stored run with decisions', () => {
  const node = (node_id: string, status: RunNode['status'], enteredS: number, output = ''): RunNode => ({
    node_id,
    status,
    output,
    entered_at: enteredS,
    exited_at: enteredS + 1,
    queue_wait_ms: null,
    prompt_tokens: null,
    output_tokens: null,
    warnings: [],
    thinking: null,
  });
  const record = (
    decision: GateDecisionRecord['decision'],
    atS: number,
    extra: Partial<GateDecisionRecord> = {},
  ): GateDecisionRecord => ({
    id: String(atS),
    run_id: RUN,
    thread_id: THREAD,
    gate: 'gate',
    decision,
    decided_by: { id: 'u1', name: 'Ada' },
    role: 'member',
    reason: null,
    edits: null,
    response: null,
    outcome: null,
    route_to: null,
    decided_at: new Date(atS * 1000).toISOString(),
    ...extra,
  });
  const detail = (nodes: RunNode[], decisions: GateDecisionRecord[], extra: Partial<RunDetail> = {}): RunDetail => ({
    id: RUN,
    thread_id: THREAD,
    agent: 'change-review',
    model: 'm',
    status: 'completed',
    message: 'hi',
    project_path: null,
    output: 'done',
    error_detail: null,
    end_reason: null,
    started_at: new Date(1000_000).toISOString(),
    finished_at: null,
    routes: [],
    pending_gate: null,
    resumable: true,
    decisions,
    approvals: null,
    nodes,
    ...extra,
  });

  it('places each decision where it was taken among the outputs, with who, their role and when', () => {
    const view = viewFromDetail(
      detail(
        [
          node('intake', 'completed', 1000, 'Intake.'),
          node('analysis', 'completed', 1002, 'First.'),
          node('gate', 'approved', 1004),
          node('analysis', 'completed', 1011, 'Second.'),
          node('gate', 'approved', 1013),
          node('output', 'completed', 1021, 'Published.'),
        ],
        [
          record('respond', 1010, { response: 'More on tests.', route_to: 'analysis' }),
          record('approve', 1015, { decided_by: { id: 'u1', name: 'Ada' } }),
          record('edit', 1020, { decided_by: { id: 'u2', name: 'Ben' }, edits: { analysis: 'Edited.' } }),
        ],
      ),
    );
    expect(view.transcript.map((entry) => entry.decision?.kind ?? entry.text)).toEqual([
      'Intake.',
      'First.',
      'respond',
      'Second.',
      'approve',
      'edit',
      'Published.',
    ]);
    expect(view.transcript[5]!.decision).toMatchObject({ by: ['Ben'], role: 'member', edits: { analysis: 'Edited.' } });
    expect(view.transcript[5]!.decision!.at).toBe(new Date(1020_000).toISOString());
    expect(view.returns).toEqual([{ from: 'gate', to: 'analysis' }]);
    expect(view.phases.gate).toBe('gate_passed');
    expect(view.decisions).toHaveLength(3);
  });

  it('marks a gate its deadline decided, and one sent back that the run has not reached again', () => {
    const expired = viewFromDetail(
      detail([node('gate', 'rejected', 1000)], [record('expire', 1800, { outcome: 'reject' })], {
        status: 'rejected',
      }),
    );
    expect(expired.phases.gate).toBe('gate_expired');
    expect(expired.transcript[0]!.decision).toMatchObject({ kind: 'expire', by: [], outcome: 'reject' });

    const sentBack = viewFromDetail(
      detail(
        [
          node('analysis', 'completed', 1000, 'First.'),
          node('gate', 'approved', 1002),
          node('analysis', 'running', 1011),
        ],
        [record('respond', 1010, { route_to: 'analysis' })],
        { status: 'running' },
      ),
    );
    expect(sentBack.phases).toMatchObject({ gate: 'gate_returned', analysis: 'active' });
  });

  it('shows the approvals a waiting gate has so far', () => {
    const approvals = { needed: 2, given: 1, by: [{ id: 'u1', name: 'Ada', at: new Date(1010_000).toISOString() }] };
    const view = viewFromDetail(
      detail([node('gate', 'waiting_approval', 1004)], [record('approve', 1010)], {
        status: 'waiting_approval',
        pending_gate: { node: 'gate', question: 'Publish?', required_context: [], context: {}, approvals_needed: 2 },
        approvals,
      }),
    );
    expect(view.approvals).toEqual(approvals);
    expect(view.phases.gate).toBe('gate_waiting');
  });
});
