import { errorMessage } from '@contracts/errors';
import type { ApprovalItem } from '@contracts/runs';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { approvalsApi } from '../api/approvals.api';
import { threadsApi, type DecisionChoice } from '../api/threads.api';
import { approvedBy, outcomeText } from './gate-decision';
import { useRunsStore } from './runs.store';
import { useSessionStore } from './session.store';

/** One waiting gate of the inbox: a run stops at one gate at a time, but a gate may be reached again. */
export const itemKey = (item: Pick<ApprovalItem, 'run_id' | 'gate'>) => `${item.run_id}:${item.gate}`;

/** The gates still waiting for this person: those they have not approved already. */
export function waitingFor(items: readonly ApprovalItem[], userId: string | null | undefined): ApprovalItem[] {
  return items.filter((item) => !approvedBy(item.approvals, userId));
}

/**
 * The approvals inbox: every gate waiting for the caller to decide, across their projects, oldest first, refreshed
 * on a poll and after every decision. A gate is decided here without opening its thread; the run on screen, when it
 * is the one decided, is followed as if decided from its card.
 */
export const useApprovalsStore = defineStore('approvals', () => {
  const runs = useRunsStore();
  const session = useSessionStore();
  const items = ref<ApprovalItem[]>([]);
  /** False until the first answer: the header shows no count before it. */
  const loaded = ref(false);
  /** Why the last load failed; the list shown is then out of date. */
  const error = ref<string | null>(null);
  /** The inbox is shown in place of the canvas and its panes. */
  const open = ref(false);
  /** The item whose decision is being sent. */
  const busy = ref<string | null>(null);
  /** Per item, what became of the last decision taken on it here (or why it was refused). */
  const results = ref<Record<string, { ok: boolean; text: string }>>({});
  /** The last decision's outcome, for the top of the inbox and for screen readers; `seq` tells two alike apart. */
  const notice = ref<{ ok: boolean; text: string; seq: number } | null>(null);
  let timer: ReturnType<typeof setInterval> | undefined;
  let loading: Promise<void> | null = null;

  const count = computed(() => waitingFor(items.value, session.me?.user.id).length);

  /** Reloads the list; never throws (a failure is kept in `error` for the inbox to show with a Retry). */
  function refresh(): Promise<void> {
    // One request at a time: the poll, a decision and a gate reached may all ask at once.
    loading ??= (async () => {
      try {
        items.value = await approvalsApi.list();
        loaded.value = true;
        error.value = null;
      } catch (e) {
        error.value = `The approvals waiting for you could not be loaded: ${errorMessage(e)}`;
      } finally {
        loading = null;
      }
    })();
    return loading;
  }

  function poll(everyMs = 5000): void {
    clearInterval(timer);
    void refresh();
    timer = setInterval(() => void refresh(), everyMs);
  }

  async function decide(item: ApprovalItem, decision: DecisionChoice): Promise<void> {
    const key = itemKey(item);
    busy.value = key;
    try {
      const accepted = await threadsApi.decideGate(item.thread_id, item.gate, decision);
      const text = outcomeText(decision, accepted);
      results.value[key] = { ok: true, text };
      notice.value = {
        ok: true,
        text: `${item.agent} (${item.project.name}): ${text}`,
        seq: (notice.value?.seq ?? 0) + 1,
      };
      // The same run on screen goes on there too.
      void runs.adopt(accepted);
    } catch (e) {
      const text = `The decision was not taken: ${errorMessage(e)}`;
      results.value[key] = { ok: false, text };
      notice.value = {
        ok: false,
        text: `${item.agent} (${item.project.name}): ${text}`,
        seq: (notice.value?.seq ?? 0) + 1,
      };
    } finally {
      busy.value = null;
      await refresh();
    }
  }

  function show(visible = true): void {
    open.value = visible;
    if (visible) void refresh();
  }

  // A decision from an approval card, and a run of this studio reaching a gate, change what waits.
  runs.onDecision(() => void refresh());
  runs.onGateWaiting(() => void refresh());

  return { items, loaded, error, open, busy, results, notice, count, refresh, poll, decide, show };
});
