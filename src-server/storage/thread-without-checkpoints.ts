import type { RunnableConfig } from '@langchain/core/runnables';

/**
 * A key of a graph's `configurable` saying its thread has no checkpoint yet: the first leg of a run created with its
 * thread. The leg's first read, of the thread's latest checkpoint, then answers nothing without asking the store;
 * under load that read waited seconds in the pool's queue before a new run's first phase could begin.
 */
export const THREAD_WITHOUT_CHECKPOINTS = 'svc_thread_without_checkpoints';

/** Whether a checkpointer's read of `config` can answer "none" at once (both checkpointers ask this). */
export function readsNoCheckpoint(config: RunnableConfig): boolean {
  return config.configurable?.[THREAD_WITHOUT_CHECKPOINTS] === true && !config.configurable.checkpoint_id;
}
