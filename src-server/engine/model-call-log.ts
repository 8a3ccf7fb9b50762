import { randomUUID } from 'node:crypto';
import type { Logger } from '../log';
import type { CallUsage } from '../models/model-client';
import type { PriceTable } from '../models/model-prices';
import { parseModel } from '../models/model-ref';
import type { ModelCallStore, ModelCallWrite } from '../storage/types';
import { BatchWriter } from './batch-writer';
import type { IsTransient } from './retry';

/**
 * The usage accounting's record of every model call this process makes, priced as the call ends (the price it was
 * made at is kept with it) and written in shared batches as node rows are. Only calls that happened report usage: a
 * turn a node replays from its record makes none, so it is not counted again. A write the database refuses drops that
 * call with a logged error, and one tried while the database is away waits, as node rows do: a run never fails for it.
 */
export class ModelCallLog {
  private readonly writer: BatchWriter<ModelCallWrite>;

  constructor(
    store: ModelCallStore,
    private readonly prices: PriceTable,
    options: { isTransient: IsTransient; log: Logger },
  ) {
    this.writer = new BatchWriter<ModelCallWrite>({
      write: (calls) => store.record(calls),
      isTransient: options.isTransient,
      log: options.log,
      what: 'model calls',
      maxBatch: 500,
    });
  }

  record(runId: string, node: string, usage: CallUsage): void {
    const { price, costUsd } = this.prices.price(usage.model, usage.prompt_tokens, usage.output_tokens);
    this.writer.push({
      id: randomUUID(),
      runId,
      node,
      provider: parseModel(usage.model).provider,
      model: usage.model,
      inputTokens: usage.prompt_tokens,
      outputTokens: usage.output_tokens,
      durationMs: usage.duration_ms,
      loadMs: usage.load_ms,
      generationMs: usage.generation_ms,
      queueWaitMs: usage.queue_wait_ms,
      inputPerMtok: price?.input_per_mtok ?? null,
      outputPerMtok: price?.output_per_mtok ?? null,
      costUsd,
    });
  }

  flush(withinMs?: number): Promise<void> {
    return this.writer.flush(withinMs);
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
