import { describe, expect, it } from 'vitest';
import type { GraphDefinition } from '@contracts/runs';
import { directionFor, extent, layout } from './graph-layout';

const review = {
  name: 'review',
  entry: 'intake',
  phases: ['intake', 'analysis', 'gate', 'output', 'cancelled'].map((id) => ({ id })),
  edges: [
    { from: 'intake', to: 'analysis' },
    { from: 'analysis', to: 'gate' },
    { from: 'gate', to: 'output', condition: 'approved' },
    { from: 'gate', to: 'cancelled', condition: 'rejected' },
  ],
} as unknown as GraphDefinition;

const sizes = new Map([
  ['intake', { width: 180, height: 56 }],
  ['analysis', { width: 166, height: 56 }],
  ['gate', { width: 222, height: 56 }],
  ['output', { width: 166, height: 56 }],
  ['cancelled', { width: 166, height: 56 }],
]);

describe('the graph laid out from its measured cards', () => {
  it('puts ranks one after the other and a rank side by side, no two cards overlapping', () => {
    for (const direction of ['right', 'down'] as const) {
      const at = layout(review, direction, sizes);
      const boxes = [...at].map(([id, p]) => ({ id, ...p, ...sizes.get(id)! }));
      for (const a of boxes) {
        for (const b of boxes) {
          if (a.id >= b.id) continue;
          const apart = a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
          expect(apart, `${a.id} and ${b.id} ${direction}`).toBe(true);
        }
      }
      const along = (id: string) => (direction === 'right' ? at.get(id)!.x : at.get(id)!.y);
      expect(along('intake')).toBeLessThan(along('analysis'));
      expect(along('gate')).toBeLessThan(along('output'));
      expect(along('output')).toBe(along('cancelled'));
    }
    // Left to right, the gate's edges carry their labels between it and the next rank.
    expect(extent(review, 'right', sizes)).toEqual({ width: 180 + 166 + 222 + 166 + 2 * 44 + 84, height: 56 * 2 + 20 });
    expect(extent(review, 'down', sizes)).toEqual({ width: 166 * 2 + 20, height: 56 * 4 + 3 * 26 });
  });

  it('reads left to right where that fits, top to bottom where the canvas is narrow, else what shrinks least', () => {
    expect(directionFor(review, sizes, { width: 1200, height: 400 })).toBe('right');
    expect(directionFor(review, sizes, { width: 760, height: 440 })).toBe('down');
    expect(directionFor(review, sizes, { width: 420, height: 310 })).toBe('down');
    // A short, wide canvas: neither fits, and left to right shrinks less.
    expect(directionFor(review, sizes, { width: 700, height: 150 })).toBe('right');
  });
});
