import type { Comparison } from '@contracts/comparisons';
import { errorMessage } from '@contracts/errors';
import { defineStore } from 'pinia';
import { ref } from 'vue';
import { comparisonsApi } from '../api/comparisons.api';

/** How often the view reads a comparison again while one of its runs still runs. */
const POLL_MS = 1000;
const settled = (status: string) => status !== 'running' && status !== 'queued';

/**
 * The comparison view (docs/compare.md): a comparison beside the run it compares, read again every second while the
 * comparison runs, until it ends or stops for a person.
 */
export const useComparisonStore = defineStore('comparison', () => {
  const open = ref(false);
  /** The comparison shown: its run's id. */
  const runId = ref<string | null>(null);
  const data = ref<Comparison | null>(null);
  const error = ref<string | null>(null);
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function read(): Promise<void> {
    clearTimeout(timer);
    const shown = runId.value;
    if (!open.value || !shown) return;
    try {
      const answer = await comparisonsApi.get(shown);
      if (shown !== runId.value) return;
      data.value = answer;
      error.value = null;
      if (!settled(answer.comparison.status) || !settled(answer.original.status)) timer = setTimeout(read, POLL_MS);
    } catch (e) {
      if (shown === runId.value) error.value = errorMessage(e);
    }
  }

  /** Shows the comparison whose run is `comparisonRunId`. */
  async function show(comparisonRunId: string): Promise<void> {
    if (runId.value !== comparisonRunId) data.value = null;
    runId.value = comparisonRunId;
    open.value = true;
    await read();
  }

  /** Starts a comparison of `originalRunId` and shows it; the refusal's words are thrown to the form. */
  async function start(originalRunId: string, model: string | undefined, version: string | undefined): Promise<void> {
    const started = await comparisonsApi.start(originalRunId, {
      ...(model && { model }),
      ...(version && { agent_version: version }),
    });
    await show(started.run_id);
  }

  function close(): void {
    clearTimeout(timer);
    open.value = false;
  }

  return { open, runId, data, error, show, start, close };
});
