import { describe, expect, it } from 'vitest';
import { estimateWaits } from './queue-estimate';

describe('the estimated wait of a queued call', () => {
  it('is the rest of the call ahead while it is younger than an average one', () => {
    expect(estimateWaits(1, 1, [1], 4)).toEqual([3]);
  });

  it('grows with a call ahead that runs long, rather than promising it ends at once', () => {
    // A 7 s call ahead, against calls of 0.6 s on average: not 0.6 s, but as long again.
    expect(estimateWaits(1, 1, [7], 0.6)).toEqual([7]);
  });

  it('counts the calls of the waiters ahead, slot by slot', () => {
    // Two slots, both held for 1 s of an average 2: they free in 1 s, and each next call takes 2 s more.
    expect(estimateWaits(5, 2, [1, 1], 2)).toEqual([1, 1, 3, 3, 5]);
  });

  it('is nothing for a slot that is free, and follows the average after it', () => {
    expect(estimateWaits(3, 2, [0.5], 1)).toEqual([0, 0.5, 1]);
  });

  it('stays cheap for hundreds of waiters and slots', () => {
    const held = Array.from({ length: 1024 }, (_, i) => i / 100);
    const started = performance.now();
    const waits = estimateWaits(500, 1024, held, 5);
    expect(waits).toHaveLength(500);
    expect(waits).toEqual([...waits].sort((a, b) => a - b));
    expect(performance.now() - started).toBeLessThan(50);
  });
});
