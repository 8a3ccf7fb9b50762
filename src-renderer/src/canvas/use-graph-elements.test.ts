import { describe, expect, it } from 'vitest';
import type { GraphDefinition } from '@contracts/runs';
import { ref } from 'vue';
import { applyEvent, emptyView } from '../stores/run-view';
import { boxesOf } from './graph-layout';
import { gateMark, phaseTools, useGraphElements, type GraphShape } from './use-graph-elements';
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

describe('routing rules and the path taken on the canvas', () => {
  const phase = (id: string, kind: 'llm' | 'gate' | 'terminal', extra: object = {}) => ({
    id,
    name: id,
    kind,
    description: '',
    routes: [],
    overrides: null,
    overrides_from: null,
    ...extra,
  });
  const rule = { condition: 'contains', match: 'ship', target: 'output', priority: 10 } as const;
  const definition = (analysis: object) =>
    ({
      name: 'review',
      kind: 'agent',
      category: 'review',
      entry: 'intake',
      phases: [
        phase('intake', 'llm'),
        phase('analysis', 'llm', analysis),
        phase('gate', 'gate'),
        phase('output', 'llm'),
        phase('cancelled', 'terminal'),
      ],
      edges: [
        { from: 'intake', to: 'analysis' },
        { from: 'analysis', to: 'gate' },
        { from: 'gate', to: 'output', condition: 'approved' },
        { from: 'gate', to: 'cancelled', condition: 'rejected' },
      ],
    }) as unknown as GraphDefinition;

  it('draws a saved rule that skips the gate over it, and a sent-back edge under the forward ones', () => {
    const view = ref(emptyView());
    const { edges } = useGraphElements(ref(definition({ overrides: { routing_overrides: [rule] } })), view);
    expect(edges.value.find((e) => e.id === 'rule:analysis->output')).toMatchObject({
      type: 'arc',
      data: { bend: 'over', lane: 0 },
      label: 'contains ship · skips gate',
      class: 'rule-edge skips-gate',
    });
    applyEvent(view.value, { type: 'gate_responded', node: 'gate', to: 'analysis', response: 'r', reason: null }, 1);
    expect(edges.value.find((e) => e.id === 'return:gate->analysis')).toMatchObject({
      type: 'arc',
      data: { bend: 'under' },
    });
  });

  it("an arc runs between its cards' sides the flow crosses, as laid out, in either direction", () => {
    const graph = ref(definition({ overrides: { routing_overrides: [rule] } }));
    const shape = ref<GraphShape>({ direction: 'right', sizes: new Map() });
    const { nodes, edges } = useGraphElements(graph, ref(emptyView()), shape);
    // A card's box as laid out: where its node is placed, and its size.
    const box = (id: string) => {
      const laid = boxesOf(graph.value, shape.value.direction, shape.value.sizes).get(id)!;
      expect(nodes.value.find((n) => n.id === id)!.position).toEqual({ x: laid.x, y: laid.y });
      return laid;
    };
    const arc = () => edges.value.find((e) => e.id === 'rule:analysis->output')!;
    let [from, to] = [box('analysis'), box('output')];
    expect(arc().data).toMatchObject({
      start: { x: from.x + from.width, y: from.y + from.height / 2 },
      end: { x: to.x, y: to.y + to.height / 2 },
    });
    expect(nodes.value[0]).toMatchObject({ sourcePosition: 'right', targetPosition: 'left' });

    shape.value = { direction: 'down', sizes: new Map() };
    [from, to] = [box('analysis'), box('output')];
    expect(arc().data).toMatchObject({
      start: { x: from.x + from.width / 2, y: from.y + from.height },
      end: { x: to.x + to.width / 2, y: to.y },
    });
    // The cards' handles move with the flow: Vue Flow measures them again when a node's positions change.
    expect(nodes.value[0]).toMatchObject({ sourcePosition: 'bottom', targetPosition: 'top' });
  });

  it("an asset's rule to the next phase is a plain edge; the taken path and a rejection's end are coloured", () => {
    const view = ref(emptyView());
    const { edges, nodes } = useGraphElements(
      ref(
        definition({
          routes: [
            { ...rule, target: 'gate' },
            { ...rule, match: 'x', target: 'intake' },
          ],
        }),
      ),
      view,
    );
    // analysis → gate is the graph's own edge already: no second edge; back to intake bends under.
    expect(edges.value.filter((e) => e.id.includes('analysis->gate')).map((e) => e.id)).toEqual(['analysis->gate']);
    expect(edges.value.find((e) => e.id === 'rule:analysis->intake')).toMatchObject({ data: { bend: 'under' } });
    for (const [seq, node] of ['intake', 'analysis'].entries()) {
      applyEvent(view.value, { type: 'node_enter', node }, seq * 2 + 1);
      applyEvent(view.value, { type: 'node_exit', node, status: 'completed' }, seq * 2 + 2);
    }
    applyEvent(view.value, { type: 'node_enter', node: 'gate' }, 5);
    applyEvent(view.value, { type: 'gate_waiting', node: 'gate', question: 'q', required_context: [], context: {} }, 6);
    applyEvent(view.value, { type: 'gate_rejected', node: 'gate', reason: null, deciders: ['Ada'] }, 7);
    const classOf = (id: string) => edges.value.find((e) => e.id === id)!.class;
    // A rejected run's path is drawn end to end in its own colour, to the phase the rejection ends it at.
    expect(classOf('intake->analysis')).toBe('taken rejected');
    expect(classOf('analysis->gate')).toBe('taken rejected');
    expect(classOf('gate->cancelled')).toBe('taken rejected');
    expect(classOf('gate->output')).toBe('');
    const cancelled = nodes.value.find((n) => n.id === 'cancelled')!;
    expect(cancelled.data).toMatchObject({ rejectedEnd: true, mark: 'the run ended here: rejected' });
    expect(nodes.value.find((n) => n.id === 'output')!.data).toMatchObject({ rejectedEnd: false });
  });
});
