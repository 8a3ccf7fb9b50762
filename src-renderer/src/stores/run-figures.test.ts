import type { RunEvent } from '@contracts/events';
import type { RunDetail, RunNode } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import {
  applyEvent,
  emptyView,
  formatDuration,
  phaseDuration,
  phaseOutputTokens,
  runTotals,
  runView,
  settle,
  StoredPhases,
} from './run-view';

const RUN = '11111111-1111-4111-8111-111111111111';
const THREAD = '22222222-2222-4222-8222-222222222222';

function node(id: string, enteredS: number, exitedS: number | null, figures: Partial<RunNode> = {}): RunNode {
  return {
    node_id: id,
    status: exitedS === null ? 'running' : 'completed',
    output: `${id} output`,
    entered_at: enteredS,
    exited_at: exitedS,
    first_token_at: null,
    queue_wait_ms: null,
    prompt_tokens: null,
    output_tokens: null,
    warnings: [],
    thinking: null,
    ...figures,
  };
}

function stored(nodes: RunNode[]): RunDetail {
  return {
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
    started_at: new Date(1_000_000).toISOString(),
    finished_at: new Date(1_010_000).toISOString(),
    routes: [],
    pending_gate: null,
    resumable: false,
    decisions: [],
    approvals: null,
    usage: null,
    nodes,
  };
}

/** A stored run settled by its record. */
function detail(nodes: RunNode[]) {
  const view = runView(stored(nodes));
  settle(view, stored(nodes));
  return view;
}

describe('phase figures', () => {
  it('come from the stored node rows: duration, queue wait, token counts, and the run totals', () => {
    const view = detail([
      node('intake', 1000, 1001.25, { queue_wait_ms: 300, prompt_tokens: 120, output_tokens: 40 }),
      node('analysis', 1001.3, 1004.3, { queue_wait_ms: 0, prompt_tokens: 200, output_tokens: 310 }),
    ]);
    expect(phaseDuration(view.figures.intake!)).toBe(1250);
    expect(view.figures.intake).toMatchObject({
      queueWaitMs: 300,
      promptTokens: 120,
      outputTokens: 40,
      source: 'server',
    });
    expect(phaseOutputTokens(view.figures.analysis!)).toEqual({ count: 310, reported: true });
    expect(runTotals(view)).toEqual({ runMs: 4250, queueWaitMs: 300, promptTokens: 320, outputTokens: 350, phases: 2 });
  });

  it('are measured while a run streams: arrival times, streamed tokens, then the counts of node_exit', () => {
    const view = emptyView();
    const at = (event: RunEvent, id: number, now: number) => applyEvent(view, event, id, now);
    at({ type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'a', model: 'm' }, 1, 5000);
    at({ type: 'node_enter', node: 'dispatch' }, 2, 5000);
    for (let i = 0; i < 7; i++) at({ type: 'token', node: 'dispatch', text: 'x ' }, 3 + i, 5100 + i);
    expect(phaseDuration(view.figures.dispatch!, 5600)).toBe(600);
    expect(phaseOutputTokens(view.figures.dispatch!)).toEqual({ count: 7, reported: false });
    at(
      {
        type: 'node_exit',
        node: 'dispatch',
        status: 'completed',
        queue_wait_ms: 15,
        prompt_tokens: 90,
        output_tokens: 6,
      },
      10,
      6500,
    );
    expect(phaseDuration(view.figures.dispatch!, 99_999)).toBe(1500);
    expect(phaseOutputTokens(view.figures.dispatch!)).toEqual({ count: 6, reported: true });
    expect(runTotals(view, 99_999)).toMatchObject({ runMs: 1500, queueWaitMs: 15, promptTokens: 90, outputTokens: 6 });
  });

  it("come from a phase's stored row when its events are replayed: the n-th entry of a node takes its n-th row", () => {
    const rows = [
      node('analysis', 1000, 1001, { output_tokens: 40 }),
      node('gate', 1002, 1003),
      node('analysis', 1011, null),
    ];
    const view = runView({ ...stored(rows), status: 'running' });
    const phases = new StoredPhases(rows);
    const replay: RunEvent[] = [
      { type: 'node_enter', node: 'analysis' },
      { type: 'token', node: 'analysis', text: 'First.' },
      { type: 'node_exit', node: 'analysis', status: 'completed' },
      { type: 'node_enter', node: 'gate' },
      { type: 'gate_waiting', node: 'gate', question: 'Go?', required_context: [], context: {} },
    ];
    replay.forEach((event, i) => phases.apply(view, event, i + 1, 9_000_000));
    expect(phaseDuration(view.figures.analysis!)).toBe(1000);
    expect(view.figures.analysis).toMatchObject({ outputTokens: 40, streamedTokens: 0, source: 'server' });
    expect(view.figures.gate).toMatchObject({ enteredAt: 1002_000, exitedAt: 1003_000 });

    // Sent back: the second run of the phase, still open, from when its row says it started, counting what streams.
    phases.apply(view, { type: 'gate_responded', node: 'gate', to: 'analysis', response: 'More.', reason: null }, 6);
    phases.apply(view, { type: 'node_enter', node: 'analysis' }, 7, 9_000_000);
    phases.apply(view, { type: 'token', node: 'analysis', text: 'Sec' }, 8, 9_000_000);
    expect(view.figures.analysis).toMatchObject({ enteredAt: 1011_000, exitedAt: null, streamedTokens: 1 });
    phases.apply(view, { type: 'node_exit', node: 'analysis', status: 'completed', output_tokens: 7 }, 9, 1015_000);
    expect(view.figures.analysis).toMatchObject({ exitedAt: 1015_000, outputTokens: 7 });

    // Entered again beyond what was stored: measured as it runs.
    phases.apply(view, { type: 'node_enter', node: 'gate' }, 10, 1016_000);
    expect(view.figures.gate).toMatchObject({ enteredAt: 1016_000, exitedAt: null, source: 'live' });
  });

  it('of a phase a takeover cut off and ran again come from the row of its second run (the first was dropped)', () => {
    const rows = [node('dispatch', 1000, 1001), node('execute', 1030, 1034, { output_tokens: 12 })];
    const view = runView(stored(rows));
    const phases = new StoredPhases(rows);
    const replay: RunEvent[] = [
      { type: 'node_enter', node: 'dispatch' },
      { type: 'node_exit', node: 'dispatch', status: 'completed' },
      { type: 'node_enter', node: 'execute' },
      { type: 'token', node: 'execute', text: 'cut ' },
      { type: 'run_resumed', run_id: RUN, attempt: 2, node: 'execute' },
      { type: 'node_enter', node: 'execute' },
      { type: 'token', node: 'execute', text: 'whole' },
      { type: 'node_exit', node: 'execute', status: 'completed', output_tokens: 12 },
    ];
    replay.forEach((event, i) => phases.apply(view, event, i + 1, 9_000_000));
    expect(view.figures.execute).toMatchObject({ enteredAt: 1030_000, exitedAt: 1034_000, source: 'server' });
    expect(view.transcript).toEqual([{ node: 'execute', text: 'whole' }]);
  });

  it('leave token totals unknown when no phase reported any', () => {
    expect(runTotals(detail([node('intake', 1000, 1001)]))).toMatchObject({ promptTokens: null, outputTokens: null });
  });

  it('read as a person would say them', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(12_340)).toBe('12.3 s');
    expect(formatDuration(245_000)).toBe('4 min 05 s');
  });
});
