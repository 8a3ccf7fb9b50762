import type { RunEvent } from '@contracts/events';
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
