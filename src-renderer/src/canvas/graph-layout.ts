import type { GraphDefinition } from '@contracts/runs';

/** Which way the phases follow each other: left to right, or top to bottom where the canvas is narrow. */
export type Direction = 'right' | 'down';

export interface Size {
  width: number;
  height: number;
}

/** A card's size before it is measured: about a phase with a two-word name. */
const UNMEASURED: Size = { width: 180, height: 58 };
/** Between ranks: room for an edge's arrow, and beside it, top to bottom, its label ("approved", "rejected"). */
const RANK_GAP: Record<Direction, number> = { right: 44, down: 26 };
/** Left to right, a label sits on its edge between the ranks: they move apart to make room for it. */
const LABELLED_RANK_GAP = 84;
/** Between two cards of one rank. */
const SIBLING_GAP: Record<Direction, number> = { right: 20, down: 20 };

/** Each phase's rank: its distance from the entry along the graph's edges; a phase no edge reaches comes last. */
export function ranksOf(graph: GraphDefinition): string[][] {
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
  const unreached = depth.size;
  const ranks: string[][] = [];
  for (const phase of graph.phases) (ranks[depth.get(phase.id) ?? unreached] ??= []).push(phase.id);
  return ranks.filter(Boolean);
}

/**
 * Where each card goes, its top-left corner: ranks one after the other in the direction, as far apart as their
 * measured cards need, and the cards of a rank side by side across it, centred on the graph's axis.
 */
export function layout(
  graph: GraphDefinition,
  direction: Direction,
  sizes: ReadonlyMap<string, Size> = new Map(),
): Map<string, { x: number; y: number }> {
  const sizeOf = (id: string) => sizes.get(id) ?? UNMEASURED;
  // Along: the axis the ranks follow; across: the one a rank's cards share.
  const along = (s: Size) => (direction === 'right' ? s.width : s.height);
  const across = (s: Size) => (direction === 'right' ? s.height : s.width);
  const positions = new Map<string, { x: number; y: number }>();
  const labelled = new Set(graph.edges.filter((e) => e.condition).map((e) => e.from));
  let at = 0;
  for (const rank of ranksOf(graph)) {
    const depth = Math.max(...rank.map((id) => along(sizeOf(id))));
    const breadth = rank.reduce((sum, id) => sum + across(sizeOf(id)), 0) + SIBLING_GAP[direction] * (rank.length - 1);
    let side = -breadth / 2;
    for (const id of rank) {
      // Centred within its rank's depth, so that edges between ranks run straight.
      const offset = at + (depth - along(sizeOf(id))) / 2;
      positions.set(id, direction === 'right' ? { x: offset, y: side } : { x: side, y: offset });
      side += across(sizeOf(id)) + SIBLING_GAP[direction];
    }
    const labels = direction === 'right' && rank.some((id) => labelled.has(id));
    at += depth + (labels ? LABELLED_RANK_GAP : RANK_GAP[direction]);
  }
  return positions;
}

/** A card's place (its top-left corner) and size. */
export type Box = { x: number; y: number } & Size;

/** Each card's place and size, laid out in the direction. */
export function boxesOf(
  graph: GraphDefinition,
  direction: Direction,
  sizes: ReadonlyMap<string, Size>,
): Map<string, Box> {
  const boxes = new Map<string, Box>();
  for (const [id, at] of layout(graph, direction, sizes)) boxes.set(id, { ...at, ...(sizes.get(id) ?? UNMEASURED) });
  return boxes;
}

/** The box the cards take, laid out in the direction. */
export function extent(graph: GraphDefinition, direction: Direction, sizes: ReadonlyMap<string, Size>): Size {
  const boxes = [...boxesOf(graph, direction, sizes).values()];
  if (!boxes.length) return { width: 0, height: 0 };
  const left = Math.min(...boxes.map((b) => b.x));
  const top = Math.min(...boxes.map((b) => b.y));
  const right = Math.max(...boxes.map((b) => b.x + b.width));
  const bottom = Math.max(...boxes.map((b) => b.y + b.height));
  return { width: right - left, height: bottom - top };
}

/**
 * The direction that shows the graph largest in a box (the canvas, less its margins): left to right when that fits
 * at full size, else top to bottom when that does, else whichever needs the least shrinking.
 */
export function directionFor(graph: GraphDefinition, sizes: ReadonlyMap<string, Size>, box: Size): Direction {
  const scale = (direction: Direction) => {
    const { width, height } = extent(graph, direction, sizes);
    return Math.min(box.width / Math.max(width, 1), box.height / Math.max(height, 1));
  };
  const right = scale('right');
  if (right >= 1) return 'right';
  return scale('down') > right ? 'down' : 'right';
}
