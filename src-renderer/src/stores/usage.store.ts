import type { UsageReport } from '@contracts/usage';
import { errorMessage } from '@contracts/errors';
import { defineStore } from 'pinia';
import { ref } from 'vue';
import { usageApi } from '../api/usage.api';
import type { UsageDimension, UsageSlot } from './usage-figures';

/** The view stays open across a reload of the page, as the Models view does. */
const OPEN_KEY = 'svc.usage-view-open';
/** The ranges offered, in days: the last one (24 hours, drawn by the hour: a first day's calls would be one bar), … */
export const USAGE_RANGES = [1, 7, 30, 90] as const;
export type UsageRange = (typeof USAGE_RANGES)[number];
export const rangeLabel = (range: UsageRange) => (range === 1 ? 'last 24 hours' : `last ${range} days`);
/** The last 24 hours by the hour, longer ranges by the day. */
export const slotOf = (range: UsageRange): UsageSlot => (range === 1 ? 'hour' : 'day');

/**
 * The Usage view: the model calls the caller may see (hers, and every call of the projects she owns) over the last
 * days, per day and per agent, model or project, and the same groups' totals over the range.
 */
export const useUsageStore = defineStore('usage', () => {
  const open = ref(sessionStorage.getItem(OPEN_KEY) === 'true');
  const range = ref<UsageRange>(30);
  const dimension = ref<UsageDimension>('model');
  /** The range's figures per slot (day or hour) and group, for the charts. */
  const bySlot = ref<UsageReport | null>(null);
  const byGroup = ref<UsageReport | null>(null);
  const error = ref<string | null>(null);
  const loading = ref(false);
  /** Answers to an earlier choice that arrive after a later one's are dropped. */
  let asked = 0;

  async function load(): Promise<void> {
    const ask = ++asked;
    const to = new Date();
    const slot = slotOf(range.value);
    // Whole UTC days, the first from its midnight, or whole hours, the first 23 before this one; the last up to now.
    const from =
      slot === 'day'
        ? new Date(Date.UTC(to.getUTCFullYear(), to.getUTCMonth(), to.getUTCDate() - (range.value - 1)))
        : new Date(Date.UTC(to.getUTCFullYear(), to.getUTCMonth(), to.getUTCDate(), to.getUTCHours() - 23));
    loading.value = true;
    try {
      const [slots, groups] = await Promise.all([
        usageApi.report(from, to, [slot, dimension.value]),
        usageApi.report(from, to, [dimension.value]),
      ]);
      if (ask !== asked) return;
      bySlot.value = slots;
      byGroup.value = groups;
      error.value = null;
    } catch (e) {
      if (ask === asked) error.value = `The usage could not be loaded: ${errorMessage(e)}`;
    } finally {
      if (ask === asked) loading.value = false;
    }
  }

  function show(visible = true): void {
    open.value = visible;
    sessionStorage.setItem(OPEN_KEY, String(visible));
    if (visible) void load();
  }

  function choose(choice: { range?: UsageRange; dimension?: UsageDimension }): void {
    if (choice.range) range.value = choice.range;
    if (choice.dimension) dimension.value = choice.dimension;
    void load();
  }

  return { open, range, dimension, bySlot, byGroup, error, loading, load, show, choose };
});
