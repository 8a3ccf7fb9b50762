import { describe, expect, it } from 'vitest';
import type { GraphDefinition } from '@contracts/runs';
import { ref } from 'vue';
import { applyEvent, emptyView } from '../stores/run-view';
import { gateMark, phaseTools, useGraphElements } from './use-graph-elements';
import { pendingWrite } from '../stores/pending-tool-call.fixture';

describe("a gate's mark on the canvas", () => {
  it('counts approvals while it waits for several, then says how its last decision went', () => {
    const view = emptyView();
    applyEvent(view, { type: 'gate_waiting', node: 'gate', question: 'q', required_context: [], context: {} }, 1);
    expect(gateMark(view, 'gate')).toBeNull();
    view.approvals = { needed: 2, given: 1, by: [{ id: 'u', name: 'Ada', at: '2026-01-01T12:00:00Z' }] };
    expect(gateMark(view, 'gate')).toBe('1 of 2 approvals');
    applyEvent(view, { type: 'gate_responded', node: 'gate', to: 'analysis', response: 'r', reason: null }, 2);
    expect(gateMark(view, 'gate')).toBe('sent back to analysis');
    applyEvent(view, { type: 'gate_waiting', node: 'gate', question: 'q', required_context: [], context: {} }, 3);
    expect(gateMark(view, 'gate')).toBeNull();
    applyEvent(view, { type: 'gate_edited', node: 'gate', reason: null, edits: { a: 'b' } }, 4);
    expect(gateMark(view, 'gate')).toBe('approved with edits');
    applyEvent(view, { type: 'gate_expired', node: 'gate', outcome: 'reject', to: null }, 5);
    expect(gateMark(view, 'gate')).toBe('expired: rejected');
    expect(gateMark(view, 'analysis')).toBeNull();
  });
});

describe('a model phase with tools on the canvas', () => {
  const phase = (id: string, extra: object = {}) => ({
    id,
    name: id,
    kind: 'llm' as const,
    description: '',
    overrides: null,
    overrides_from: null,
    ...extra,
  });

  it('carries a tools badge, and waits with a mark while one of its calls waits for a decision', () => {
    expect(phaseTools({ tools: { tools: ['project.*', 'files.read'], max_tool_calls: 10 } })).toBe(
      'uses tools: project.*, files.read',
    );
    expect(
      phaseTools({ publish: { tool: 'project.write_file', from: 'analysis', content: 'content', arguments: {} } }),
    ).toBe('publishes with project.write_file');
    expect(phaseTools({})).toBeNull();

    const graph = ref({
      name: 'tool-writer',
      kind: 'agent',
      category: 'review',
      entry: 'intake',
      phases: [phase('intake', { tools: { tools: ['project.*'], max_tool_calls: 10 } }), phase('analysis')],
      edges: [{ from: 'intake', to: 'analysis' }],
    } as unknown as GraphDefinition);
    const view = ref(emptyView());
    const { nodes } = useGraphElements(graph, view);
    applyEvent(view.value, { type: 'node_enter', node: 'intake' }, 1);
    applyEvent(
      view.value,
      {
        type: 'tool_waiting',
        node: 'intake',
        question: 'Run project.write_file?',
        required_context: [],
        context: {},
        tool_call: pendingWrite('c0'),
      },
      2,
    );
    const [intake, analysis] = nodes.value;
    expect(intake!.data).toMatchObject({
      state: 'tool_waiting',
      tools: 'uses tools: project.*',
      mark: 'waits for a tool call',
      waitingCall: 'project.write_file',
    });
    expect(analysis!.data).toMatchObject({ state: 'idle', tools: null, mark: null, waitingCall: null });
  });
});
