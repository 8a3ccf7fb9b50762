import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { PriceTable } from './model-prices';

describe('the price table', () => {
  const table = new PriceTable({
    'cloud_c:gpt-4.1-mini': { input_per_mtok: 0.4, output_per_mtok: 1.6 },
    cloud_b: { input_per_mtok: 3, output_per_mtok: 15 },
    'local:llama3.2': { input_per_mtok: 0, output_per_mtok: 0 },
  });

  it("prices a model by its own entry, then its provider's; a model it does not name has no price", () => {
    const priced = table.price('cloud_c:gpt-4.1-mini', 1_000_000, 500_000);
    expect(priced.price).toEqual({ input_per_mtok: 0.4, output_per_mtok: 1.6 });
    expect(priced.costUsd).toBeCloseTo(0.4 + 0.8, 12);
    expect(table.price('cloud_b:claude-sonnet-4', 2000, 1000).costUsd).toBeCloseTo((2000 * 3 + 1000 * 15) / 1e6, 12);
    expect(table.price('cloud_c:gpt-5', 1000, 1000)).toEqual({ price: null, costUsd: null });
    expect(table.price('qwen3', 1000, 1000)).toEqual({ price: null, costUsd: null });
  });

  it('takes a bare local model name and its local: spelling as one model, and prices it 0 only when told to', () => {
    expect(table.price('llama3.2', 1000, 1000).costUsd).toBe(0);
    expect(table.price('llama3.2:3b', 1000, 1000).costUsd).toBeNull();
  });

  it('leaves the cost unknown when the call reported no token count', () => {
    expect(table.price('cloud_c:gpt-4.1-mini', null, 20).costUsd).toBeNull();
  });

  it('reads MODEL_PRICES_FILE, with MODEL_PRICES over it, and refuses a table that is not one at start', () => {
    const config = loadConfig({
      MODEL_PRICES: '{"cloud_c": {"input_per_mtok": 1, "output_per_mtok": 2}}',
      MODEL_PRICES_FILE: `${import.meta.dirname}/../../test/fixtures/model-prices.json`,
    });
    const prices = PriceTable.fromConfig(config);
    expect(prices.priceOf('cloud_c:gpt-4.1-mini')).toEqual({ input_per_mtok: 1, output_per_mtok: 2 });
    expect(prices.priceOf('cloud_a:gemini-2.5-flash')).toEqual({ input_per_mtok: 0.3, output_per_mtok: 2.5 });
    expect(() => loadConfig({ MODEL_PRICES: '{"cloud_c": {"input_per_mtok": -1, "output_per_mtok": 2}}' })).toThrow(
      /MODEL_PRICES\.cloud_c\.input_per_mtok: .*>=0/,
    );
    expect(() => loadConfig({ MODEL_PRICES: 'cloud_c=1' })).toThrow(/MODEL_PRICES: not JSON/);
    expect(() => loadConfig({ MODEL_PRICES_FILE: '/nowhere/prices.json' })).toThrow(
      /MODEL_PRICES_FILE: cannot read \/nowhere\/prices\.json/,
    );
  });
});
