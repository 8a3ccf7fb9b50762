import type { StreamedEvent } from '../api/sse-client';

/** Runs `flush` once, later; the function returned cancels it. */
export type Schedule = (flush: () => void) => () => void;

/** Events that come many a second while a phase streams; any other event is applied at once. */
const BATCHED: ReadonlySet<string> = new Set(['token', 'thinking']);

/** How long a hidden page (which gets no animation frames) waits before its view catches up with the tokens. */
const HIDDEN_FLUSH_MS = 250;

/**
 * The next animation frame, or a timer when no frame comes (a hidden page gets none): whichever is first.
 */
export const nextFrame: Schedule = (flush) => {
  let done = false;
  let frame = 0;
  const run = () => {
    if (done) return;
    done = true;
    if (frame) cancelAnimationFrame(frame);
    clearTimeout(timer);
    flush();
  };
  if (typeof requestAnimationFrame === 'function') frame = requestAnimationFrame(run);
  const timer = setTimeout(run, HIDDEN_FLUSH_MS);
  return () => {
    done = true;
    if (frame) cancelAnimationFrame(frame);
    clearTimeout(timer);
  };
};

/**
 * Holds a stream's token events until the next frame, so a fast model changes the view (and the screen) at most
 * once per animation frame. Any other event first hands over the tokens held, then itself at once, so the order of
 * events is kept and a status change (a gate, the end) is never delayed. The view changes for the whole batch
 * in one go, and the screen is drawn once for it.
 */
export class TokenBatcher {
  private pending: StreamedEvent[] = [];
  private cancel: (() => void) | null = null;

  constructor(
    private readonly apply: (events: StreamedEvent[]) => void,
    private readonly schedule: Schedule = nextFrame,
  ) {}

  push(streamed: StreamedEvent): void {
    if (BATCHED.has(streamed.event.type)) {
      this.pending.push(streamed);
      this.cancel ??= this.schedule(() => {
        this.cancel = null;
        this.flush();
      });
      return;
    }
    this.flush();
    this.apply([streamed]);
  }

  /** Hands over the tokens held now (at the end of a stream, or before anything reads the view's position). */
  flush(): void {
    this.cancel?.();
    this.cancel = null;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.apply(batch);
  }
}
