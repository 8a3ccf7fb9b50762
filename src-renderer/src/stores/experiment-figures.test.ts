import type { ExperimentSummary } from '@contracts/experiments';
import { describe, expect, it } from 'vitest';
import { chartPoints, formatRate, formatSpread, ticksUpTo } from './experiment-figures';

const experiment = (id: string, model: string, created: string, rate: number | null, cost: number | null) =>
  ({
    id,
    model,
    created_at: created,
    totals: {
      checks: [],
      pass_rate: rate,
      input_tokens: 10,
      output_tokens: 5,
      cost_usd: cost,
      first_token_ms: { median: null, p95: null },
      run_ms: { median: 1200, p95: 1500 },
    },
  }) as unknown as ExperimentSummary;

describe('the experiments’ figures', () => {
  it('writes rates and spreads as people read them', () => {
    expect(formatRate(2 / 3)).toBe('67%');
    expect(formatRate(null)).toBe('—');
    expect(formatSpread({ median: 1200, p95: 3400 })).toBe('1.2 s (p95 3.4 s)');
    expect(formatSpread({ median: null, p95: null })).toBe('—');
  });

  it('draws axes in round steps from zero past the largest value', () => {
    expect(ticksUpTo(1)).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(ticksUpTo(0.0037)).toEqual([0, 0.001, 0.002, 0.003, 0.004]);
    expect(ticksUpTo(2300)).toEqual([0, 1000, 2000, 3000]);
    expect(ticksUpTo(0)).toEqual([0, 1]);
  });

  it('labels each point by its model, numbering the models two experiments share, oldest first', () => {
    const points = chartPoints(
      [
        experiment('c', 'ollama:fake-model', '2026-01-03T00:00:00Z', 1, 0.002),
        experiment('b', 'ollama:llama3.2', '2026-01-02T00:00:00Z', 0.5, null),
        experiment('a', 'ollama:fake-model', '2026-01-01T00:00:00Z', 0.75, 0.001),
      ],
      'cost',
    );
    expect(points.map((p) => [p.label, p.rate, p.value])).toEqual([
      ['fake-model #1', 0.75, 0.001],
      ['llama3.2', 0.5, null],
      ['fake-model #2', 1, 0.002],
    ]);
    expect(chartPoints([experiment('a', 'x', '2026-01-01T00:00:00Z', 1, 1)], 'run_ms')[0]!.value).toBe(1200);
  });
});
