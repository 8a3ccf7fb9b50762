import type { Phase } from '@contracts/assets';
import type { GraphDefinition } from '@contracts/runs';
import { MarkerType, type Edge, type Node } from '@vue-flow/core';
import { computed, type Ref } from 'vue';
import { approvalsText } from '../stores/gate-decision';
import type { RunView } from '../stores/run-view';

const COLUMN = 270;
const ROW = 110;

/** Places phases in columns by their distance from the entry, following the graph's edges. */
function layout(graph: GraphDefinition): Map<string, { x: number; y: number }> {
  const depth = new Map<string, number>([[graph.entry, 0]]);
  const queue = [graph.entry];
  while (queue.length) {
    const id = queue.shift()!;
    for (const edge of graph.edges.filter((e) => e.from === id)) {
      if (!depth.has(edge.to)) {
        depth.set(edge.to, depth.get(id)! + 1);
        queue.push(edge.to);
      }
    }
  }
  const rows = new Map<number, number>();
  const positions = new Map<string, { x: number; y: number }>();
  for (const phase of graph.phases) {
    const column = depth.get(phase.id) ?? depth.size;
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    positions.set(phase.id, { x: column * COLUMN, y: row * ROW });
  }
  return positions;
}

/**
 * What a gate's card says besides its state: its approvals while it waits for several people, else how its last
 * decision went when the state alone does not tell (edited, sent back, expired).
 */
export function gateMark(view: RunView, id: string): string | null {
  if (view.phases[id] === 'gate_waiting')
    return view.pendingGate?.node === id && view.approvals && view.approvals.needed > 1
      ? approvalsText(view.approvals)
      : null;
  const last = view.transcript.findLast((entry) => entry.decision?.gate === id)?.decision;
  switch (last?.kind) {
    case 'edit':
      return 'approved with edits';
    case 'respond':
      return `sent back${last.to ? ` to ${last.to}` : ''}`;
    case 'expire':
      return last.outcome === 'route'
        ? `expired → ${last.to}`
        : last.outcome === 'approve'
          ? 'expired: approved'
          : 'expired: rejected';
    default:
      return null;
  }
}

/** What a model phase says besides its state: the tool call it waits at. */
export function phaseMark(view: RunView, id: string): string | null {
  return view.phases[id] === 'tool_waiting' ? 'waits for a tool call' : null;
}

/** The tools a phase may use, in words, for its badge: its tool patterns, or the tool it publishes with; null: none. */
export function phaseTools(phase: Pick<Phase, 'tools' | 'publish'>): string | null {
  if (phase.publish) return `publishes with ${phase.publish.tool}`;
  if (phase.tools?.tools.length) return `uses tools: ${phase.tools.tools.join(', ')}`;
  return null;
}

/** Maps the domain graph and the run on screen to Vue Flow's nodes and edges. */
export function useGraphElements(graph: Ref<GraphDefinition | null>, view: Ref<RunView>) {
  const nodes = computed<Node[]>(() => {
    if (!graph.value) return [];
    const positions = layout(graph.value);
    return graph.value.phases.map((phase) => ({
      id: phase.id,
      type: 'phase',
      position: positions.get(phase.id)!,
      data: {
        label: phase.name,
        kind: phase.kind,
        state: view.value.phases[phase.id] ?? 'idle',
        flash: view.value.flash === phase.id,
        configured: Boolean(phase.overrides),
        mark: phase.kind === 'gate' ? gateMark(view.value, phase.id) : phaseMark(view.value, phase.id),
        tools: phaseTools(phase),
        waitingCall:
          view.value.pendingGate?.node === phase.id ? (view.value.pendingGate.tool_call?.tool ?? null) : null,
      },
    }));
  });

  const edges = computed<Edge[]>(() => {
    if (!graph.value) return [];
    const matched = new Set(view.value.routes.map((r) => `${r.from}->${r.to}`));
    const base: Edge[] = graph.value.edges.map((e) => ({
      id: `${e.from}->${e.to}`,
      source: e.from,
      target: e.to,
      label: e.condition,
      markerEnd: MarkerType.ArrowClosed,
      animated: view.value.phases[e.from] === 'active',
    }));
    const routed: Edge[] = [...matched]
      .filter((key) => !base.some((b) => b.id === key))
      .map((key) => {
        const [source, target] = key.split('->') as [string, string];
        return {
          id: `route:${key}`,
          source,
          target,
          label: 'rule',
          class: 'route-edge',
          markerEnd: MarkerType.ArrowClosed,
          animated: true,
        };
      });
    // A gate that sent the flow back to an earlier phase (respond): an edge back, live while that phase works again.
    const returned: Edge[] = [...new Set(view.value.returns.map((r) => `${r.from}->${r.to}`))].map((key) => {
      const [source, target] = key.split('->') as [string, string];
      return {
        id: `return:${key}`,
        source,
        target,
        type: 'smoothstep',
        label: 'sent back',
        class: 'return-edge',
        markerEnd: MarkerType.ArrowClosed,
        animated: view.value.phases[target] === 'active',
      };
    });
    return [...base, ...routed, ...returned];
  });

  return { nodes, edges };
}
