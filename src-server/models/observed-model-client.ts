import type { CallUsage, ModelClient } from './model-client';

/** How a model call ended: with its answer, with an error, or stopped by its run (a cancel, a timeout, a shutdown). */
export type ModelCallOutcome = 'ok' | 'error' | 'cancelled';

/** Told of every model call's end, for the process's metrics (main.ts passes one in when metrics are on). */
export interface ModelCallObserver {
  /**
   * `model` as the run named it (user input: the observer decides what of it to keep); `seconds` from the call to
   * its end, less its wait for a local-runtime slot when it reported one; `usage` when the call reported it.
   */
  modelCallEnded(model: string, outcome: ModelCallOutcome, seconds: number, usage: CallUsage | undefined): void;
}

/**
 * The model client with every call observed at its end: one wrapper per call, nothing per token (the counts come
 * from the call's own usage report).
 */
export function observeModelCalls(client: ModelClient, observer: ModelCallObserver): ModelClient {
  return {
    async stream(call) {
      const began = performance.now();
      let usage: CallUsage | undefined;
      const ended = (outcome: ModelCallOutcome) => {
        const waitedMs = usage?.queue_wait_ms ?? 0;
        observer.modelCallEnded(call.model, outcome, Math.max(0, performance.now() - began - waitedMs) / 1000, usage);
      };
      try {
        const turn = await client.stream({
          ...call,
          onUsage: (reported) => {
            usage = reported;
            call.onUsage?.(reported);
          },
        });
        ended('ok');
        return turn;
      } catch (error) {
        ended(call.signal.aborted ? 'cancelled' : 'error');
        throw error;
      }
    },
  };
}
