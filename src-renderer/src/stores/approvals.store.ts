import { errorMessage } from '@contracts/errors';
import type { ApprovalItem, RunAccepted } from '@contracts/runs';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { approvalsApi } from '../api/approvals.api';
import { stopsApi, type DecisionChoice, type ToolDecisionChoice } from '../api/stops.api';
import { approvedBy, outcomeText, toolOutcomeText } from './gate-decision';
import { useRunsStore } from './runs.store';
import { shortId } from './status-label';
import { useSessionStore } from './session.store';
import { useThreadsStore } from './threads.store';

/**
 * One waiting item of the inbox: a run stops at one gate or tool call at a time, but a gate may be reached again, and
 * a phase's calls are asked about one after the other.
 */
export const itemKey = (item: Pick<ApprovalItem, 'run_id' | 'gate' | 'tool_call'>) =>
  `${item.run_id}:${item.gate}${item.tool_call ? `:${item.tool_call.call_id}` : ''}`;

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
  const threads = useThreadsStore();
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

  /** Runs seen moving on here since the last read began: a read that raced the move does not bring them back. */
  const movedOn = new Set<string>();
  /** A read asked for while one was under way: it may have begun before what it was asked for happened. */
  let again = false;

  /** Reloads the list; never throws (a failure is kept in `error` for the inbox to show with a Retry). */
  function refresh(): Promise<void> {
    // One request at a time (the poll, a decision and a gate reached may all ask at once), and one more after it.
    if (loading) {
      again = true;
      return loading;
    }
    loading = (async () => {
      try {
        const listed = await approvalsApi.list();
        items.value = again ? listed.filter((item) => !movedOn.has(item.run_id)) : listed;
        if (!again) movedOn.clear();
        loaded.value = true;
        error.value = null;
      } catch (e) {
        error.value = `The approvals waiting for you could not be loaded: ${errorMessage(e)}`;
      } finally {
        loading = null;
        if (again) {
          again = false;
          void refresh();
        }
      }
    })();
    return loading;
  }

  /** A run no longer waits (decided, cancelled, ended): its items leave the inbox and its count at once. */
  function dropRun(runId: string): void {
    movedOn.add(runId);
    items.value = items.value.filter((item) => item.run_id !== runId);
  }

  function poll(everyMs = 5000): void {
    clearInterval(timer);
    void refresh();
    timer = setInterval(() => void refresh(), everyMs);
  }

  /** A decision at a waiting gate. */
  function decide(item: ApprovalItem, decision: DecisionChoice): Promise<void> {
    return send(
      item,
      () => stopsApi.decide(item.stop, decision),
      (accepted) => outcomeText(decision, accepted),
    );
  }

  /** A decision on a waiting tool call. */
  function decideToolCall(item: ApprovalItem, choice: ToolDecisionChoice): Promise<void> {
    if (item.stop.kind !== 'tool_call') return Promise.resolve();
    return send(
      item,
      () => stopsApi.decide(item.stop, choice),
      (accepted) => toolOutcomeText(choice, accepted),
    );
  }

  /**
   * Which run a confirmation is about: its agent, its thread's name (or message), else the run's short id, and its
   * project.
   */
  function runLabel(item: ApprovalItem): string {
    const name = threads.threads.find((t) => t.id === item.thread_id)?.name ?? item.message;
    const short = name && name.length > 60 ? `${name.slice(0, 59)}…` : name;
    return `${item.agent} · ${short ? `“${short}”` : `run ${shortId(item.run_id)}`} (${item.project.name})`;
  }

  /** Sends one decision on an item; what became of it is kept with the item and said at the top of the inbox. */
  async function send(
    item: ApprovalItem,
    decision: () => Promise<RunAccepted>,
    outcome: (accepted: RunAccepted) => string,
  ): Promise<void> {
    const key = itemKey(item);
    const which = runLabel(item);
    busy.value = key;
    try {
      const accepted = await decision();
      threads.track({ threadId: accepted.thread_id, runId: accepted.run_id, status: accepted.status });
      const text = outcome(accepted);
      results.value[key] = { ok: true, text };
      notice.value = {
        ok: true,
        text: `${which}: ${text}`,
        seq: (notice.value?.seq ?? 0) + 1,
      };
      // The same run on screen goes on there too.
      void runs.adopt(accepted);
    } catch (e) {
      const text = `The decision was not taken: ${errorMessage(e)}`;
      results.value[key] = { ok: false, text };
      notice.value = {
        ok: false,
        text: `${which}: ${text}`,
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
  threads.onRunSeen((seen) => {
    if (seen.status === 'waiting_approval') {
      movedOn.delete(seen.runId);
      return;
    }
    dropRun(seen.runId);
    void refresh();
  });

  return { items, loaded, error, open, busy, results, notice, count, refresh, poll, decide, decideToolCall, show };
});
