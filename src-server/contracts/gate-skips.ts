import type { Edge, NodeKind } from './assets';

/** What the check reads of a graph: a layout (server) and a graph definition (studio) both give it. */
export interface GraphShape {
  entry: string;
  nodes: readonly { id: string; kind: NodeKind }[];
  edges: readonly Edge[];
}

/** The nodes reachable from the entry along the graph's own edges without going through `avoid`. */
function reachableAvoiding(graph: GraphShape, avoid: string | null): Set<string> {
  const seen = new Set<string>();
  if (graph.entry === avoid) return seen;
  const queue = [graph.entry];
  seen.add(graph.entry);
  while (queue.length) {
    const id = queue.shift()!;
    for (const edge of graph.edges) {
      if (edge.from !== id || edge.to === avoid || seen.has(edge.to)) continue;
      seen.add(edge.to);
      queue.push(edge.to);
    }
  }
  return seen;
}

/**
 * The gates a routing rule from `from` to `to` lets a run go past without stopping at them, in graph order.
 *
 * A gate is skipped when, on the graph's own edges, `from` can be reached without passing the gate (it is before or
 * beside it) while `to` cannot (every way to it leads through the gate): the rule jumps from before the gate to after
 * it. A rule to a terminal node is no skip: the run ends there, and nothing after the gate runs.
 */
export function gatesSkipped(graph: GraphShape, from: string, to: string): string[] {
  if (graph.nodes.find((n) => n.id === to)?.kind === 'terminal') return [];
  const everywhere = reachableAvoiding(graph, null);
  return graph.nodes
    .filter((node) => node.kind === 'gate' && node.id !== from && node.id !== to)
    .filter((gate) => {
      const without = reachableAvoiding(graph, gate.id);
      return without.has(from) && everywhere.has(to) && !without.has(to);
    })
    .map((gate) => gate.id);
}
