import type { Direction } from './graph-layout';

/** Room between an arc and the cards it goes around. */
const CLEAR = 14;
/** The room between two arcs that bend the same way. */
const LANE = 28;
/** How far an arc runs straight out of its source, and into its target, before it turns: within the ranks' gap. */
const STEP = 12;
/** The radius of an arc's corners. */
const CORNER = 8;

export type Bend = 'over' | 'under';

export type Point = { x: number; y: number };

/** What an arc edge carries: how it bends, its lane, how far the cards it goes around reach, and its two ends. */
export interface ArcData {
  bend: Bend;
  lane: number;
  clearance: number;
  start: Point;
  end: Point;
}

/** A polyline through `points` with its corners rounded, as an SVG path. */
function roundedPath(points: Point[]): string {
  const parts = [`M${points[0]!.x},${points[0]!.y}`];
  for (let i = 1; i < points.length - 1; i++) {
    const [before, at, after] = [points[i - 1]!, points[i]!, points[i + 1]!];
    const toward = (p: Point) => {
      const d = Math.hypot(p.x - at.x, p.y - at.y);
      const r = Math.min(CORNER, d / 2);
      return d === 0 ? at : { x: at.x + ((p.x - at.x) / d) * r, y: at.y + ((p.y - at.y) / d) * r };
    };
    const [a, b] = [toward(before), toward(after)];
    parts.push(`L${a.x},${a.y}`, `Q${at.x},${at.y} ${b.x},${b.y}`);
  }
  const last = points.at(-1)!;
  parts.push(`L${last.x},${last.y}`);
  return parts.join(' ');
}

/**
 * A path from a source handle (right side of a card) to a target handle (left side) that goes over or under the
 * cards between them instead of through them, and the middle of its run for its label: out of the source, across to
 * a lane beyond the cards (`clearance` is how far they reach from the source's middle on that side; `lane` stacks
 * several arcs that bend the same way), along it, and back into the target. Top to bottom (`down`: from a card's
 * bottom to another's top), the same path with the axes swapped: `over` passes left of the cards, `under` right.
 */
export function arcPath(
  source: Point,
  target: Point,
  bend: Bend,
  { lane = 0, clearance = 45, direction = 'right' }: { lane?: number; clearance?: number; direction?: Direction } = {},
): { path: string; labelX: number; labelY: number; labelAnchor: 'middle' | 'start' | 'end' } {
  const swap = (p: Point) => (direction === 'right' ? p : { x: p.y, y: p.x });
  const [s, t] = [swap(source), swap(target)];
  const across = s.y + (bend === 'over' ? -1 : 1) * (clearance + CLEAR + lane * LANE);
  const [out, into] = [s.x + STEP, t.x - STEP];
  const points = [s, { x: out, y: s.y }, { x: out, y: across }, { x: into, y: across }, { x: into, y: t.y }, t];
  const label = swap({ x: (out + into) / 2, y: across });
  if (direction === 'right') {
    return { path: roundedPath(points.map(swap)), labelX: label.x, labelY: label.y, labelAnchor: 'middle' };
  }
  // Beside a lane that runs down, the label reads away from the cards, not over them.
  const away = bend === 'over' ? -1 : 1;
  return {
    path: roundedPath(points.map(swap)),
    labelX: label.x + away * 6,
    labelY: label.y + 4,
    labelAnchor: away < 0 ? 'end' : 'start',
  };
}
