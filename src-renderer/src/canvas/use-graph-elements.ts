import type { GraphDefinition } from '@contracts/runs';
import { MarkerType, type Edge, type Node } from '@vue-flow/core';
import { computed, type Ref } from 'vue';
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
    return [...base, ...routed];
  });

  return { nodes, edges };
}
