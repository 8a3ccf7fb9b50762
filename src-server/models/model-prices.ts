import type { Config } from '../config';
import type { ModelPrice, ModelPrices } from '../contracts/usage';
import { parseModel } from './model-ref';

/** A call's cost, with the price it was computed from (kept with the call: a later change of price changes nothing). */
export interface PricedCall {
  price: ModelPrice | null;
  /** USD; null when the model has no price or the call reported no token counts. */
  costUsd: number | null;
}

/**
 * The configured price table (MODEL_PRICES_FILE, then MODEL_PRICES over it). A model's price is its own entry, under
 * the string the run named or its `<provider>:<name>` spelling (`llama3.2` and `local:llama3.2` are one model), else
 * its provider's entry (`cloud_c`). Nothing is fetched: a model the table does not name has no price, and its calls
 * cost null, not 0 (local models included, unless priced here).
 */
export class PriceTable {
  private readonly prices: ReadonlyMap<string, ModelPrice>;

  constructor(prices: ModelPrices) {
    this.prices = new Map(Object.entries(prices));
  }

  static fromConfig(config: Pick<Config, 'MODEL_PRICES' | 'MODEL_PRICES_FILE'>): PriceTable {
    return new PriceTable({ ...config.MODEL_PRICES_FILE, ...config.MODEL_PRICES });
  }

  priceOf(model: string): ModelPrice | null {
    const { provider, name } = parseModel(model);
    return this.prices.get(model) ?? this.prices.get(`${provider}:${name}`) ?? this.prices.get(provider) ?? null;
  }

  /** Tokens × price per million; a count the runtime did not report leaves the cost unknown. */
  price(model: string, inputTokens: number | null, outputTokens: number | null): PricedCall {
    const price = this.priceOf(model);
    if (!price || inputTokens === null || outputTokens === null) return { price, costUsd: null };
    return { price, costUsd: (inputTokens * price.input_per_mtok + outputTokens * price.output_per_mtok) / 1e6 };
  }
}
