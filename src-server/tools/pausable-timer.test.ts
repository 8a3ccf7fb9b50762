import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PausableTimer } from './pausable-timer';

describe('a time limit that pauses while a person answers', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
  afterEach(() => vi.useRealTimers());

  it('fires after the time it ran, not counting the pauses', () => {
    const expired = vi.fn();
    const timer = new PausableTimer(1000, expired);
    vi.advanceTimersByTime(600);
    const resume = timer.pause();
    vi.advanceTimersByTime(60_000);
    expect(expired).not.toHaveBeenCalled();
    resume();
    vi.advanceTimersByTime(399);
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(expired).toHaveBeenCalledOnce();
  });

  it('runs again only when the last of nested pauses ends, and a resume called twice counts once', () => {
    const expired = vi.fn();
    const timer = new PausableTimer(100, expired);
    const first = timer.pause();
    const second = timer.pause();
    first();
    first();
    vi.advanceTimersByTime(1000);
    expect(expired).not.toHaveBeenCalled();
    second();
    vi.advanceTimersByTime(100);
    expect(expired).toHaveBeenCalledOnce();
  });

  it('never fires once cleared', () => {
    const expired = vi.fn();
    const timer = new PausableTimer(100, expired);
    timer.pause()();
    timer.clear();
    vi.advanceTimersByTime(1000);
    expect(expired).not.toHaveBeenCalled();
  });
});
