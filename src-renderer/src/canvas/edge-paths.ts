/** How far an arc leaves its row: enough to clear a phase card (about 90 px tall) centred on the row. */
const ARC_RISE = 115;
/** The room between two arcs that bend the same way. */
const LANE = 28;

export type Bend = 'over' | 'under';

/**
 * A cubic curve from a source handle (right side of a card) to a target handle (left side) that goes over or under
 * the cards between them instead of through them, and the point halfway along it for its label. `lane` stacks
 * several arcs that bend the same way.
 */
export function arcPath(
  source: { x: number; y: number },
  target: { x: number; y: number },
  bend: Bend,
  lane = 0,
): { path: string; labelX: number; labelY: number } {
  const rise = (bend === 'over' ? -1 : 1) * (ARC_RISE + lane * LANE);
  const reach = Math.max(60, Math.abs(target.x - source.x) / 4);
  const c1 = { x: source.x + reach, y: source.y + rise };
  const c2 = { x: target.x - reach, y: target.y + rise };
  return {
    path: `M${source.x},${source.y} C${c1.x},${c1.y} ${c2.x},${c2.y} ${target.x},${target.y}`,
    labelX: (source.x + 3 * c1.x + 3 * c2.x + target.x) / 8,
    labelY: (source.y + 3 * c1.y + 3 * c2.y + target.y) / 8,
  };
}
