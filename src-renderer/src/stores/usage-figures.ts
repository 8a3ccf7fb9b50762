import type { UsageRow } from '@contracts/usage';

/** The groups the Usage view charts by, and what each is called. */
export const USAGE_DIMENSIONS = { agent: 'Agent', model: 'Model', project: 'Project' } as const;
export type UsageDimension = keyof typeof USAGE_DIMENSIONS;

/** What a chart of the Usage view plots per day. */
export const USAGE_MEASURES = {
  runs: 'Runs',
  tokens: 'Tokens (prompt + answer)',
  cost: 'Cost (USD)',
  latency: 'Mean call latency (ms)',
} as const;
export type UsageMeasure = keyof typeof USAGE_MEASURES;

/**
 * A cost as a person reads it: `$0.0123`, small ones with two significant digits (`$0.000072`), never rounded to
 * `$0`; `cost unknown` when no call had a price; with the calls left out when some had none.
 */
export function formatCost(usd: number | null, unpricedCalls = 0): string {
  if (usd === null) return 'cost unknown';
  const shown =
    usd === 0
      ? '$0.00'
      : usd >= 1
        ? `$${usd.toFixed(2)}`
        : usd >= 0.01
          ? `$${usd.toFixed(4)}`
          : `$${usd.toLocaleString('en', { maximumSignificantDigits: 2, maximumFractionDigits: 12 })}`;
  return unpricedCalls > 0 ? `${shown} + ${unpricedCalls} unpriced call${unpricedCalls === 1 ? '' : 's'}` : shown;
}

export const formatCount = (n: number) => n.toLocaleString('en');

/** 812 ms, 1.4 s, under 1 ms; a dash for none. */
export function formatMs(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1) return 'under 1 ms';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** How the charts divide their range: by UTC day, or by hour (the last 24 hours). */
export type UsageSlot = 'day' | 'hour';

/**
 * Every UTC day (YYYY-MM-DD) or hour (YYYY-MM-DDTHH:00Z, as the API groups them) from `from` to `to`, both included:
 * one without calls is a zero, not a gap.
 */
export function slotsBetween(from: Date, to: Date, slot: UsageSlot): string[] {
  const slots: string[] = [];
  const at = new Date(from);
  at.setUTCMinutes(0, 0, 0);
  if (slot === 'day') at.setUTCHours(0);
  while (at <= to) {
    slots.push(slot === 'day' ? at.toISOString().slice(0, 10) : `${at.toISOString().slice(0, 13)}:00Z`);
    if (slot === 'day') at.setUTCDate(at.getUTCDate() + 1);
    else at.setUTCHours(at.getUTCHours() + 1);
  }
  return slots;
}

/** What a row is called in a dimension: the project's name, the model string, the agent. */
export function groupLabel(row: UsageRow, dimension: UsageDimension): string {
  if (dimension === 'project') return row.project_name ?? row.project_id ?? '—';
  return (dimension === 'agent' ? row.agent : row.model) ?? '—';
}

/** One measure of a row; a cost or a latency the row does not know is a gap (null), not a zero. */
export function measureOf(row: UsageRow, measure: UsageMeasure): number | null {
  switch (measure) {
    case 'runs':
      return row.runs;
    case 'tokens':
      return row.input_tokens + row.output_tokens;
    case 'cost':
      return row.cost_usd;
    case 'latency':
      return row.avg_duration_ms === null ? null : Math.round(row.avg_duration_ms);
  }
}

export interface UsageSeries {
  label: string;
  /** One value per slot: 0 in a slot without calls for runs and tokens, null for cost and latency. */
  values: (number | null)[];
}

/** The rows of a `<slot>,<dimension>` report as one series per group over every slot of the range (day or hour). */
export function seriesBySlot(
  rows: UsageRow[],
  slots: string[],
  slot: UsageSlot,
  dimension: UsageDimension,
  measure: UsageMeasure,
): UsageSeries[] {
  const empty = measure === 'runs' || measure === 'tokens' ? 0 : null;
  const series = new Map<string, (number | null)[]>();
  for (const row of rows) {
    const label = groupLabel(row, dimension);
    const values = series.get(label) ?? slots.map(() => empty);
    series.set(label, values);
    const at = slots.indexOf(row[slot] ?? '');
    if (at >= 0) values[at] = measureOf(row, measure);
  }
  return [...series].map(([label, values]) => ({ label, values }));
}

/**
 * Whether a measure's series have nothing to draw because nothing was priced: a cost chart would draw an empty axis
 * from 0 to 1 that reads as $0, where the truth is that no price is set.
 */
export function nothingPriced(measure: UsageMeasure, series: UsageSeries[]): boolean {
  return measure === 'cost' && series.every((s) => s.values.every((value) => value === null));
}
