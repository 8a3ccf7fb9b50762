import type { RunEvent } from '@contracts/events';
import type { RunNode } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import {
  applyEvent,
  emptyView,
  formatDuration,
  phaseDuration,
  phaseOutputTokens,
  runTotals,
  viewFromDetail,
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
    queue_wait_ms: null,
    prompt_tokens: null,
    output_tokens: null,
    warnings: [],
    thinking: null,
    ...figures,
  };
}

function detail(nodes: RunNode[]) {
  return viewFromDetail({
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
    started_at: new Date(1_000_000).toISOString(),
    finished_at: new Date(1_010_000).toISOString(),
    routes: [],
    pending_gate: null,
    resumable: false,
    decisions: [],
    approvals: null,
    nodes,
  });
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

  it("keep a stored phase's figures when its events are replayed after a reload", () => {
    const view = detail([node('intake', 1000, 1002, { output_tokens: 40 }), node('analysis', 1002, null)]);
    applyEvent(view, { type: 'node_enter', node: 'intake' }, 1, 9_000_000);
    applyEvent(view, { type: 'node_exit', node: 'intake', status: 'completed' }, 2, 9_000_500);
    expect(phaseDuration(view.figures.intake!)).toBe(2000);
    expect(view.figures.intake!.outputTokens).toBe(40);
    // The phase still open is measured again from its replayed events.
    applyEvent(view, { type: 'node_enter', node: 'analysis' }, 3, 9_001_000);
    expect(view.figures.analysis!.source).toBe('live');
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
