import { describe, expect, it } from 'vitest';
import { loopIsBehind } from './loop-lag';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the event loop watch', () => {
  it('says the loop is behind once a turn has kept it busy, and for a while after', async () => {
    loopIsBehind();
    await sleep(120);
    // A turn of 150 ms: the watch's timer, due every 50 ms, fires that much late.
    const until = performance.now() + 150;
    while (performance.now() < until);
    await sleep(60);
    expect(loopIsBehind()).toBe(true);
    await sleep(300);
    expect(loopIsBehind()).toBe(true);
  });
});
