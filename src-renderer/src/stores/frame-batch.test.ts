import { describe, expect, it } from 'vitest';
import type { StreamedEvent } from '../api/sse-client';
import { TokenBatcher } from './frame-batch';

/** A frame clock the test advances by hand. */
function frames() {
  let queued: (() => void) | null = null;
  return {
    schedule: (flush: () => void) => {
      queued = flush;
      return () => (queued = null);
    },
    tick: () => {
      const run = queued;
      queued = null;
      run?.();
    },
    pending: () => queued !== null,
  };
}

const token = (id: number, text: string, node = 'a'): StreamedEvent => ({ id, event: { type: 'token', node, text } });

describe('tokens reach the view at most once per animation frame', () => {
  it('holds the tokens of a frame and hands them over together when it is drawn', () => {
    const clock = frames();
    const applied: number[][] = [];
    const batcher = new TokenBatcher((events) => applied.push(events.map((e) => e.id)), clock.schedule);
    for (let id = 1; id <= 50; id++) batcher.push(token(id, `t${id}`));
    expect(applied).toEqual([]);
    clock.tick();
    for (let id = 51; id <= 60; id++) batcher.push(token(id, `t${id}`));
    clock.tick();
    clock.tick();
    expect(applied).toEqual([
      Array.from({ length: 50 }, (_, i) => i + 1),
      Array.from({ length: 10 }, (_, i) => i + 51),
    ]);
  });

  it('hands over any other event at once, after the tokens before it, in stream order', () => {
    const clock = frames();
    const applied: number[][] = [];
    const batcher = new TokenBatcher((events) => applied.push(events.map((e) => e.id)), clock.schedule);
    batcher.push(token(1, 'a'));
    batcher.push(token(2, 'b'));
    batcher.push({ id: 3, event: { type: 'node_exit', node: 'a', status: 'completed' } });
    batcher.push({ id: 4, event: { type: 'node_enter', node: 'b' } });
    expect(applied).toEqual([[1, 2], [3], [4]]);
    // Nothing is left for the frame the first token asked for.
    expect(clock.pending()).toBe(false);
  });

  it('flush() hands over what is held now (the stream ended between frames)', () => {
    const clock = frames();
    const applied: number[][] = [];
    const batcher = new TokenBatcher((events) => applied.push(events.map((e) => e.id)), clock.schedule);
    batcher.push(token(1, 'a'));
    batcher.flush();
    batcher.flush();
    clock.tick();
    expect(applied).toEqual([[1]]);
  });
});
