import type { ExperimentSummary } from '@contracts/experiments';
import { formatCost, formatMs } from './usage-figures';

/** A pass rate (0 to 1) as a person reads it: `67%`; a dash before anything is scored. */
export const formatRate = (rate: number | null) => (rate === null ? '—' : `${Math.round(rate * 100)}%`);

/** A median and a 95th percentile: `1.2 s (p95 3.4 s)`. */
export const formatSpread = (spread: { median: number | null; p95: number | null }) =>
  spread.median === null ? '—' : `${formatMs(spread.median)} (p95 ${formatMs(spread.p95)})`;

/** An experiment as lists and pickers name it: its name, else its model and agent, and when it started. */
export function experimentName(e: ExperimentSummary): string {
  const when = new Date(e.created_at).toLocaleString('en', {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });
  return `${e.name ?? `${shortModel(e.model)} · ${e.agent}`} (${when})`;
}

/** A model without its provider: `llama3.2` for `ollama:llama3.2`. */
export const shortModel = (model: string) => model.slice(model.indexOf(':') + 1);

/** Up to 5 round ticks from 0 to at least `max`: 0, 0.5, 1 … or 0, 200, 400 …. */
export function ticksUpTo(max: number): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const ticks: number[] = [];
  for (let at = 0; at < max + step / 2 && ticks.length < 6; at += step) ticks.push(Number(at.toPrecision(12)));
  if (ticks.at(-1)! < max) ticks.push(Number((ticks.at(-1)! + step).toPrecision(12)));
  return ticks;
}

/** What a scatter plot of the experiments draws against the pass rate. */
export type ChartMeasure = 'cost' | 'run_ms';
export const CHART_MEASURES: Record<
  ChartMeasure,
  { title: string; axis: string; format: (v: number) => string; tick: (v: number) => string }
> = {
  cost: {
    title: 'Pass rate against cost',
    axis: 'Cost (USD)',
    format: (v) => formatCost(v),
    tick: (v) => `$${Number(v.toPrecision(3))}`,
  },
  run_ms: {
    title: 'Pass rate against run time',
    axis: 'Median run time',
    format: (v) => formatMs(v),
    tick: (v) => (v === 0 ? '0 s' : formatMs(v)),
  },
};

export interface ChartPoint {
  id: string;
  /** What the point is labelled with: the model, with a number when two experiments share it. */
  label: string;
  /** 0 to 1; null: nothing scored yet. */
  rate: number | null;
  value: number | null;
}

/** The points of one plot, one per experiment, oldest first; an experiment without the figure has a null value. */
export function chartPoints(experiments: ExperimentSummary[], measure: ChartMeasure): ChartPoint[] {
  const oldest = [...experiments].sort((a, b) => a.created_at.localeCompare(b.created_at));
  const seen = new Map<string, number>();
  const counts = new Map<string, number>();
  for (const e of oldest) counts.set(e.model, (counts.get(e.model) ?? 0) + 1);
  return oldest.map((e) => {
    const nth = (seen.get(e.model) ?? 0) + 1;
    seen.set(e.model, nth);
    const label = (counts.get(e.model) ?? 0) > 1 ? `${shortModel(e.model)} #${nth}` : shortModel(e.model);
    const value = measure === 'cost' ? e.totals.cost_usd : e.totals.run_ms.median;
    return { id: e.id, label, rate: e.totals.pass_rate, value };
  });
}
