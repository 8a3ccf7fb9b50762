import type { UsageRow } from '@contracts/usage';
import { describe, expect, it } from 'vitest';
import { formatCost, nothingPriced, seriesBySlot, slotsBetween } from './usage-figures';

const row = (extra: Partial<UsageRow>): UsageRow => ({
  runs: 1,
  calls: 3,
  input_tokens: 300,
  output_tokens: 60,
  cost_usd: 0.0123,
  unpriced_calls: 0,
  avg_duration_ms: 812.4,
  avg_generation_ms: null,
  avg_load_ms: null,
  avg_queue_wait_ms: null,
  ...extra,
});

describe('the Usage view figures', () => {
  it('writes a cost as money, never $0 for a small one, and says when it is unknown or partial', () => {
    expect(formatCost(0.0123)).toBe('$0.0123');
    expect(formatCost(12.5)).toBe('$12.50');
    expect(formatCost(0.000072)).toBe('$0.000072');
    expect(formatCost(0)).toBe('$0.00');
    expect(formatCost(null)).toBe('cost unknown');
    expect(formatCost(0.5, 2)).toBe('$0.5000 + 2 unpriced calls');
  });

  it('charts every day of the range, a day without calls as zero runs and no cost', () => {
    const days = slotsBetween(new Date('2026-11-24T15:00:00Z'), new Date('2026-11-26T09:00:00Z'), 'day');
    expect(days).toEqual(['2026-11-24', '2026-11-25', '2026-11-26']);
    const rows = [
      row({ day: '2026-11-24', model: 'cloud_c:gpt-4.1-mini' }),
      row({ day: '2026-11-26', model: 'cloud_c:gpt-4.1-mini', runs: 2 }),
      row({ day: '2026-11-26', model: 'llama3.2', cost_usd: null, unpriced_calls: 3 }),
    ];
    expect(seriesBySlot(rows, days, 'day', 'model', 'runs')).toEqual([
      { label: 'cloud_c:gpt-4.1-mini', values: [1, 0, 2] },
      { label: 'llama3.2', values: [0, 0, 1] },
    ]);
    expect(seriesBySlot(rows, days, 'day', 'model', 'cost')[1]).toEqual({
      label: 'llama3.2',
      values: [null, null, null],
    });
    expect(seriesBySlot(rows, days, 'day', 'model', 'tokens')[0]!.values).toEqual([360, 0, 360]);
  });

  it('charts the last 24 hours by the hour, as the API names them', () => {
    const hours = slotsBetween(new Date('2026-12-04T14:00:00Z'), new Date('2026-12-05T13:25:00Z'), 'hour');
    expect(hours).toHaveLength(24);
    expect([hours[0], hours.at(-1)]).toEqual(['2026-12-04T14:00Z', '2026-12-05T13:00Z']);
    const rows = [row({ hour: '2026-12-05T13:00Z', model: 'llama3.2', runs: 3 })];
    expect(seriesBySlot(rows, hours, 'hour', 'model', 'runs')[0]!.values.slice(-2)).toEqual([0, 3]);
  });
});

describe('a cost chart with nothing priced', () => {
  it('is not drawn when no call of any group had a price, and is when one had', () => {
    const unpriced = [{ label: 'llama3.2', values: [null, null] }];
    expect(nothingPriced('cost', unpriced)).toBe(true);
    expect(nothingPriced('cost', [...unpriced, { label: 'fake-model', values: [null, 0.02] }])).toBe(false);
    expect(nothingPriced('cost', [])).toBe(true);
    expect(nothingPriced('latency', unpriced)).toBe(false);
  });
});
