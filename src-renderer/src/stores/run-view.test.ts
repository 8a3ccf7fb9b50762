import type { RunEvent } from '@contracts/events';
import type { GateDecisionRecord, PendingGate, RunDetail, RunNode } from '@contracts/runs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reactive, watchEffect } from 'vue';
import {
  applyEvent,
  applyEvents,
  emptyView,
  isStuck,
  recordedTranscript,
  routeText,
  runView,
  settle,
  STUCK_AFTER_MS,
  type RunView,
} from './run-view';

const RUN = '11111111-1111-4111-8111-111111111111';
const THREAD = '22222222-2222-4222-8222-222222222222';

function fold(events: RunEvent[]) {
  const view = emptyView();
  events.forEach((event, i) => applyEvent(view, event, i + 1));
  return view;
}

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

const detail = (nodes: RunNode[], decisions: GateDecisionRecord[], extra: Partial<RunDetail> = {}): RunDetail => ({
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
  usage: null,
  nodes,
  ...extra,
});

describe('the run view', () => {
  it('says a run waits for the server, not the model, until its first phase starts', () => {
    const start = { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'change-review', model: 'm' } as const;
    const waiting = fold([start, { type: 'server_queue', position: 3, running: 200 }]);
    expect(waiting.serverQueue).toEqual({ position: 3, running: 200 });
    expect(waiting.queue).toBeNull();
    const started = fold([
      start,
      { type: 'server_queue', position: 3, running: 200 },
      { type: 'server_queue', position: 1, running: 200 },
      { type: 'node_enter', node: 'intake' },
    ]);
    expect(started.serverQueue).toBeNull();
    expect(
      fold([
        start,
        { type: 'server_queue', position: 1, running: 200 },
        { type: 'run_cancelled', run_id: RUN, reason: null },
      ]).serverQueue,
    ).toBeNull();
  });

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
        rule: { condition: 'contains', match: 'ship', target: 'output', priority: 1 },
        source: 'override',
      },
      { type: 'run_done', run_id: RUN, output: 'done' },
    ]);
    expect(view.phases.gate).toBe('gate_passed');
    expect(view.routes).toEqual([
      {
        from: 'analysis',
        to: 'output',
        rule: { condition: 'contains', match: 'ship', target: 'output', priority: 1 },
        source: 'override',
      },
    ]);
    expect(routeText(view.routes[0]!)).toBe("Route to output: rule 'contains ship' matched (a saved override)");
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
  });

  it('tells when a stored run, still running, appears stuck: from when its row says it started', () => {
    const started = new Date(Date.now() - STUCK_AFTER_MS - 1000).toISOString();
    const view = runView(detail([], [], { status: 'running', output: null, started_at: started }));
    for (const [i, event] of (
      [
        { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'change-review', model: 'm' },
        { type: 'node_enter', node: 'intake' },
        { type: 'token', node: 'intake', text: 'partial' },
      ] as RunEvent[]
    ).entries())
      applyEvent(view, event, i + 1);
    expect(view).toMatchObject({ status: 'running', startedAt: started, message: 'hi' });
    expect(view.phases.intake).toBe('active');
    expect(view.transcript).toEqual([{ node: 'intake', text: 'partial' }]);
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
        deciders: ['Ada'],
        role: null,
        reason: 'tone',
        edits: { analysis: 'The analysis, as edited.' },
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
      deciders: ['Ben'],
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
    expect(approved.transcript.at(-1)!.decision).toMatchObject({ kind: 'approve', deciders: ['Ada', 'Ben'] });
    const rejected = fold([
      ...toTheGate,
      { type: 'gate_rejected', node: 'gate', reason: 'not now', by: 'Ben' },
      { type: 'run_rejected', run_id: RUN, reason: 'not now' },
    ]);
    expect(rejected.phases.gate).toBe('gate_rejected');
    expect(rejected).toMatchObject({ status: 'rejected', pendingGate: null, approvals: null });
    expect(rejected.transcript.at(-1)!.decision).toMatchObject({
      kind: 'reject',
      deciders: ['Ben'],
      reason: 'not now',
    });
    // An event without `by` (an older server) reads as a decision by nobody named.
    expect(fold([{ type: 'gate_approved', node: 'gate', reason: null }]).transcript[0]!.decision!.deciders).toEqual([]);
  });

  it('reads who decided from `deciders`, a list on every decision, before the deprecated `by`', () => {
    const decided = (event: RunEvent) => fold([...toTheGate, event]).transcript.at(-1)!.decision!.deciders;
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
    expect(routed.routes).toEqual([{ from: 'gate', to: 'cancelled', rule: null, source: null }]);
    expect(routeText(routed.routes[0]!)).toBe('Route to cancelled: the gate gate expired');
    expect(routed.transcript.at(-1)!.decision).toMatchObject({ kind: 'expire', outcome: 'route', to: 'cancelled' });
  });
});

describe('a stored run settled by its record', () => {
  it('ends as its row says when its stream could not tell: cancelled while it waited at its gate', () => {
    const view = runView(detail([], [], { status: 'cancelled', output: null, end_reason: 'not needed any more' }));
    toTheGate.forEach((event, i) => applyEvent(view, event, i + 1));
    settle(view, detail([], [], { status: 'cancelled', output: null, end_reason: 'not needed any more' }));
    expect(view).toMatchObject({
      status: 'cancelled',
      endReason: 'not needed any more',
      pendingGate: null,
      approvals: null,
      lastEventId: toTheGate.length,
    });
    expect(view.phases).toMatchObject({ analysis: 'completed', gate: 'cancelled' });
  });

  it('fails a run the orphan sweep closed, with its error detail, and its open phase with it', () => {
    const failed = detail([], [], { status: 'error', output: null, error_detail: 'Error: orphaned by a crash' });
    const view = runView(failed);
    toTheGate.slice(0, 6).forEach((event, i) => applyEvent(view, event, i + 1));
    settle(view, failed);
    expect(view).toMatchObject({ status: 'error', errorDetail: 'Error: orphaned by a crash' });
    expect(view.phases).toMatchObject({ intake: 'completed', analysis: 'error' });
  });

  it('takes the approvals so far and whether the checkpoint is kept only for the gate the view shows waiting', () => {
    const gate: PendingGate = {
      node: 'gate',
      question: 'Publish?',
      required_context: ['analysis'],
      context: { analysis: 'The first analysis.' },
      approvals_needed: 2,
      waiting_since: '2026-01-01T12:00:00Z',
    };
    const approvals = { needed: 2, given: 1, by: [{ id: 'u1', name: 'Ada', at: '2026-01-01T12:01:00Z' }] };
    const stored = (pending: PendingGate) =>
      detail([], [record('approve', 1010)], {
        status: 'waiting_approval',
        output: null,
        pending_gate: pending,
        approvals,
        resumable: false,
      });
    const atTheGate = () => fold([...toTheGate.slice(0, -1), { type: 'gate_waiting', ...gate }]);
    const view = atTheGate();
    settle(view, stored(gate));
    expect(view).toMatchObject({ approvals, resumable: false, status: 'waiting_approval' });
    // The record of a later stop (the run went on meanwhile) says nothing of this one.
    const shown = atTheGate();
    settle(shown, stored({ ...gate, waiting_since: '2026-01-01T13:00:00Z' }));
    expect(shown).toMatchObject({ approvals: { needed: 2, given: 0, by: [] }, resumable: true });
  });
});

describe('where the stop on screen was sent', () => {
  const gate: PendingGate = {
    node: 'gate',
    question: 'Publish?',
    required_context: ['analysis'],
    context: { analysis: 'The first analysis.' },
    waiting_since: '2026-01-01T12:00:00Z',
  };
  const sentTo = [{ via: 'slack' as const, to: '#approvals', status: 'delivered' as const, error: null }];
  const stored = (pending: PendingGate) =>
    detail([], [], { status: 'waiting_approval', output: null, pending_gate: pending, sent_to: sentTo });
  const atTheGate = () => fold([...toTheGate.slice(0, -1), { type: 'gate_waiting', ...gate }]);

  it('is read from the record of the stop the view shows, and goes once it is decided', () => {
    const view = atTheGate();
    expect(view.sentTo).toEqual([]);
    settle(view, stored(gate));
    expect(view.sentTo).toEqual(sentTo);
    applyEvent(view, { type: 'gate_approved', node: 'gate', reason: null, deciders: ['Ada'] }, 99);
    expect(view.sentTo).toEqual([]);
  });

  it("is not taken from a later stop's record, and a stop reached again starts sent nowhere", () => {
    const view = atTheGate();
    settle(view, stored({ ...gate, waiting_since: '2026-01-01T13:00:00Z' }));
    expect(view.sentTo).toEqual([]);
    settle(view, stored(gate));
    applyEvent(
      view,
      { type: 'gate_responded', node: 'gate', reason: null, deciders: ['Ada'], response: 'r', to: 'analysis' },
      100,
    );
    applyEvent(view, { type: 'gate_waiting', ...gate, waiting_since: '2026-01-01T13:00:00Z' }, 101);
    expect(view.sentTo).toEqual([]);
  });

  it('goes when the run is cancelled at the stop', () => {
    const view = atTheGate();
    settle(view, stored(gate));
    applyEvent(view, { type: 'run_cancelled', run_id: RUN, reason: 'not now' }, 102);
    expect(view.sentTo).toEqual([]);
  });
});

describe('the transcript as recorded', () => {
  const transcriptOf = (view: RunView) =>
    recordedTranscript(view).map((entry) =>
      entry.decision
        ? `${entry.decision.kind} by ${entry.decision.deciders.join('+')} (${entry.decision.role})`
        : entry.text,
    );

  it('shows each approval of a gate two people approved where the gate was passed, with their roles', () => {
    const view = fold([
      ...toTheGate,
      { type: 'gate_approved', node: 'gate', reason: null, deciders: ['Ada', 'Ben'] },
      { type: 'node_enter', node: 'output' },
      { type: 'token', node: 'output', text: 'Published.' },
    ]);
    expect(transcriptOf(view)).toEqual(['Intake.', 'The first analysis.', 'approve by Ada+Ben (null)', 'Published.']);
    view.decisions = [
      record('approve', 1010, { decided_by: { id: 'u1', name: 'Ada' } }),
      record('approve', 1020, { decided_by: { id: 'u2', name: 'Ben' }, role: 'owner' }),
    ];
    expect(transcriptOf(view)).toEqual([
      'Intake.',
      'The first analysis.',
      'approve by Ada (member)',
      'approve by Ben (owner)',
      'Published.',
    ]);
    expect(recordedTranscript(view)[2]!.decision!.at).toBe(new Date(1010_000).toISOString());
  });

  it('pairs each stop of a gate with its own records: a respond, then a rejection after an approval', () => {
    const view = fold([
      ...toTheGate,
      { type: 'gate_responded', node: 'gate', to: 'analysis', response: 'More.', reason: null, deciders: ['Ben'] },
      { type: 'node_enter', node: 'analysis' },
      { type: 'token', node: 'analysis', text: 'Second.' },
      { type: 'node_exit', node: 'analysis', status: 'completed' },
      { type: 'node_enter', node: 'gate' },
      waiting({ approvals_needed: 2 }),
      { type: 'gate_rejected', node: 'gate', reason: 'no', deciders: ['Cy'] },
      { type: 'run_rejected', run_id: RUN, reason: 'no' },
    ]);
    view.decisions = [
      record('respond', 1010, { decided_by: { id: 'u2', name: 'Ben' }, route_to: 'analysis' }),
      record('approve', 1020),
      record('reject', 1030, { decided_by: { id: 'u3', name: 'Cy' } }),
    ];
    expect(transcriptOf(view)).toEqual([
      'Intake.',
      'The first analysis.',
      'respond by Ben (member)',
      'Second.',
      'approve by Ada (member)',
      'reject by Cy (member)',
    ]);
  });

  it('leaves out the approvals of a gate still waiting (its card shows them), and keeps a decision not recorded yet', () => {
    const view = fold([...toTheGate.slice(0, -1), waiting({ approvals_needed: 2 })]);
    view.decisions = [record('approve', 1010)];
    expect(transcriptOf(view)).toEqual(['Intake.', 'The first analysis.']);
    applyEvent(view, { type: 'gate_approved', node: 'gate', reason: null, deciders: ['Ada', 'Ben'] }, 99);
    view.decisions = [];
    expect(transcriptOf(view).at(-1)).toBe('approve by Ada+Ben (null)');
  });
});

describe('a batch of events folded at once', () => {
  /** A run with two phases streaming, a wait in the queue, reasoning, a phase's end and the run's. */
  const stream: RunEvent[] = [
    { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'summary', model: 'fake-model' },
    { type: 'node_enter', node: 'intake' },
    { type: 'queue', node: 'intake', position: 1, waiting: 1, active: 1, estimated_wait_s: 2 },
    ...Array.from({ length: 40 }, (_, i): RunEvent => ({ type: 'token', node: 'intake', text: `a${i} ` })),
    { type: 'thinking', node: 'intake', text: 'hmm' },
    ...Array.from({ length: 5 }, (_, i): RunEvent => ({ type: 'token', node: 'intake', text: `b${i} ` })),
    { type: 'node_exit', node: 'intake', status: 'completed' },
    { type: 'node_enter', node: 'analysis' },
    ...Array.from({ length: 30 }, (_, i): RunEvent => ({ type: 'token', node: 'analysis', text: `c${i} ` })),
    { type: 'run_done', run_id: RUN, output: 'c29 ' },
  ];
  const numbered = stream.map((event, i) => ({ id: i + 1, event }));
  afterEach(() => vi.useRealTimers());

  it('gives the view that folding them one by one gives, however the stream is cut into batches', () => {
    // One clock for every fold: a run's start is stamped with the time it is folded.
    vi.useFakeTimers({ now: new Date('2026-11-27T12:00:00Z'), toFake: ['Date'] });
    const now = Date.now();
    const oneByOne = emptyView();
    numbered.forEach(({ id, event }) => applyEvent(oneByOne, event, id, now));
    for (const size of [1, 3, 7, 50, numbered.length]) {
      const batched = emptyView();
      for (let i = 0; i < numbered.length; i += size) {
        applyEvents(batched, numbered.slice(i, i + size), (view, event, id) => applyEvent(view, event, id, now));
      }
      expect(batched).toEqual(oneByOne);
    }
    expect(oneByOne.figures.analysis?.streamedTokens).toBe(30);
    expect(oneByOne.lastEventId).toBe(numbered.length);
  });

  it("changes a reactive view's transcript once for a run of a thousand tokens", () => {
    const view = reactive(emptyView());
    applyEvent(view, { type: 'node_enter', node: 'analysis' }, 1);
    applyEvent(view, { type: 'token', node: 'analysis', text: 'x' }, 2);
    let changes = 0;
    const stop = watchEffect(
      () => {
        void view.transcript.at(-1)?.text;
        changes++;
      },
      { flush: 'sync' },
    );
    const tokens = Array.from({ length: 1000 }, (_, i) => ({
      id: i + 3,
      event: { type: 'token', node: 'analysis', text: 'y' } as RunEvent,
    }));
    applyEvents(view, tokens);
    stop();
    // Once when watched, once for the batch.
    expect(changes).toBe(2);
    expect(view.transcript.at(-1)?.text).toBe('x' + 'y'.repeat(1000));
    expect(view.lastEventId).toBe(1002);
  });
});
