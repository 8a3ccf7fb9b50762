import { TERMINAL_EVENTS } from '@contracts/events';
import type { EventHandler, StreamedEvent } from '../api/sse-client';

/** A dropped stream is re-attached this many times in a row before the studio says it failed. */
export const RECONNECT_ATTEMPTS = 10;

export interface FollowOptions {
  /**
   * Opens the first stream (a new run, a gate decision, an attach). A stream that resolves `'over'` has said there
   * is nothing more to follow (the run waits for someone to act on it): it is not re-attached.
   */
  open: (signal: AbortSignal, onEvent: EventHandler) => Promise<unknown>;
  /** Re-attaches to a run's stream after the event id given; `'over'` as for `open`. */
  attach: (runId: string, lastEventId: number, signal: AbortSignal, onEvent: EventHandler) => Promise<unknown>;
  /** Shows what is stored of a run when its stream cannot be followed any more. */
  reload: (runId: string) => Promise<void>;
  /** Takes each event as it arrives. */
  onEvent: (e: StreamedEvent) => void;
  /** Hands over anything `onEvent` still holds, so `position()` is up to date. */
  flush: () => void;
  /** The run and the last event id the view has. */
  position: () => { runId: string | null; lastEventId: number };
  signal: AbortSignal;
  /** Waits before a re-attach; attempt n waits min(500·n, 5000) ms. */
  wait?: (ms: number) => Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Follows one stream to the run's end. A stream that drops before the run ended (a proxy, a sleeping laptop, a
 * server that went away) is picked up again where it stopped: any server re-attaches after the last event id seen,
 * with the same ids and nothing missed or repeated. After RECONNECT_ATTEMPTS failed attempts in a row, or two
 * answered attaches that brought nothing (a run nobody executes any more, which ends without a last event), what
 * is stored is shown instead. Errors of the first stream are thrown; the re-attaches' are retried.
 */
export async function followStream(options: FollowOptions): Promise<void> {
  const { signal, wait = sleep } = options;
  let ended = false;
  const onEvent = (e: StreamedEvent) => {
    options.onEvent(e);
    if (TERMINAL_EVENTS.includes(e.event.type)) ended = true;
  };
  try {
    if ((await options.open(signal, onEvent)) === 'over') ended = true;
  } finally {
    options.flush();
  }
  let quiet = 0;
  for (let attempt = 1; !ended && !signal.aborted && options.position().runId; attempt++) {
    const runId = options.position().runId!;
    if (attempt > RECONNECT_ATTEMPTS || quiet >= 2) {
      await options.reload(runId);
      return;
    }
    // Quickly at first; a server that is away for longer is asked less often.
    await wait(Math.min(500 * attempt, 5000));
    if (signal.aborted) return;
    const seen = options.position().lastEventId;
    const answered = await options.attach(runId, seen, signal, onEvent).then(
      (result) => {
        if (result === 'over') ended = true;
        return true;
      },
      () => false,
    );
    options.flush();
    if (options.position().lastEventId > seen) attempt = quiet = 0;
    else if (answered) quiet++;
  }
}
