import { randomUUID } from 'node:crypto';
import type { CallUsage } from '../models/model-client';
import type { PriceTable } from '../models/model-prices';
import { parseModel } from '../models/model-ref';
import type { ModelCallWrite } from '../storage/types';
import type { RunWriter } from './run-writer';

/**
 * The usage accounting's record of every model call this process makes, priced as the call ends (the price it was
 * made at is kept with it) and written with the rest of what runs record (run-writer.ts). Only calls that happened
 * report usage: a turn a node replays from its record makes none, so it is not counted again. A write the database
 * refuses drops that call with a logged error, and one tried while the database is away waits, as node rows do: a run
 * never fails for it.
 */
export class ModelCallLog {
  constructor(
    private readonly writer: RunWriter,
    private readonly prices: PriceTable,
  ) {}

  record(runId: string, node: string, usage: CallUsage): void {
    this.writer.push({ kind: 'call', call: pricedCall(this.prices, runId, node, usage) });
  }
}

/** A call's record as the accounting keeps it, priced at the price of the moment (kept with it). */
export function pricedCall(prices: PriceTable, runId: string, node: string, usage: CallUsage): ModelCallWrite {
  const { price, costUsd } = prices.price(usage.model, usage.prompt_tokens, usage.output_tokens);
  return {
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
  };
}
