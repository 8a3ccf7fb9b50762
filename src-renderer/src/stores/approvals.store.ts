import { errorMessage } from '@contracts/errors';
import { FINISHED_RUN_STATUSES, type ApprovalItem, type RunAccepted, type RunStatus } from '@contracts/runs';
import type { AnswerQuestionBody } from '@contracts/tool-questions';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { approvalsApi } from '../api/approvals.api';
import { stopsApi, type DecisionChoice, type ToolDecisionChoice } from '../api/stops.api';
import { approvedBy, outcomeText, toolOutcomeText } from './gate-decision';
import { useRunsStore } from './runs.store';
import { shortId } from './status-label';
import { useSessionStore } from './session.store';
import { answerOutcomeText } from './tool-question';
import { useThreadsStore } from './threads.store';

/** A tool server's question, among the inbox's items: named by its stop, whether listed or answered already. */
export const questionKey = (stopId: string) => `question:${stopId}`;

/**
 * One waiting item of the inbox: a run stops at one gate or tool call at a time, but a gate may be reached again, and
 * a phase's calls are asked about one after the other. A tool server's question is a stop of its own, while the run
 * goes on running: its stop's id names it.
 */
export const itemKey = (item: Pick<ApprovalItem, 'run_id' | 'gate' | 'tool_call' | 'stop'>) =>
  item.stop.kind === 'question'
    ? questionKey(item.stop.id)
    : `${item.run_id}:${item.gate}${item.tool_call ? `:${item.tool_call.call_id}` : ''}`;

/**
 * Whether an item stays listed once its run is seen in `status`: a run that goes on running no longer waits at a gate
 * or a tool call, but its tool servers' questions wait while it runs; a run that ended waits for nothing.
 */
export const waitsWhile = (item: Pick<ApprovalItem, 'stop'>, status: RunStatus): boolean =>
  status === 'waiting_approval' || (item.stop.kind === 'question' && !FINISHED_RUN_STATUSES.includes(status));

/** The gates still waiting for this person: those they have not approved already. */
export function waitingFor(items: readonly ApprovalItem[], userId: string | null | undefined): ApprovalItem[] {
  return items.filter((item) => !approvedBy(item.approvals, userId));
}

/**
 * The approvals inbox: every gate waiting for the caller to decide, across their projects, oldest first, refreshed
 * on a poll and after every decision, with the questions tool servers ask mid-call. A gate is decided here without
 * opening its thread; the run on screen, when it is the one decided, is followed as if decided from its card.
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

  /**
   * Runs seen moving on here since the last read began, with the status they moved to: a read that raced the move
   * does not bring back what no longer waits.
   */
  const movedOn = new Map<string, RunStatus>();
  const stillWaits = (item: ApprovalItem, status: RunStatus | undefined) => !status || waitsWhile(item, status);
  /**
   * The questions answered here: a stop is asked once, so a read that began before the answer never brings one back.
   */
  const answered = new Set<string>();
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
        const unanswered = listed.filter((item) => !answered.has(item.stop.id));
        items.value = again ? unanswered.filter((item) => stillWaits(item, movedOn.get(item.run_id))) : unanswered;
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

  /**
   * A run no longer waits where it did (decided, cancelled, ended): its items leave the inbox and its count at once,
   * but for the questions of a run that goes on running.
   */
  function dropRun(runId: string, status: RunStatus): void {
    movedOn.set(runId, status);
    items.value = items.value.filter((item) => item.run_id !== runId || waitsWhile(item, status));
  }

  function poll(everyMs = 5000): void {
    clearInterval(timer);
    void refresh();
    timer = setInterval(() => void refresh(), everyMs);
  }

  /** A decision at a waiting gate. */
  function decide(item: ApprovalItem, decision: DecisionChoice): Promise<void> {
    return send(item, 'decision', async () => {
      const accepted = await stopsApi.decide(item.stop, decision);
      resumed(accepted);
      return outcomeText(decision, accepted);
    });
  }

  /** A decision on a waiting tool call. */
  function decideToolCall(item: ApprovalItem, choice: ToolDecisionChoice): Promise<void> {
    if (item.stop.kind !== 'tool_call') return Promise.resolve();
    return send(item, 'decision', async () => {
      const accepted = await stopsApi.decide(item.stop, choice);
      resumed(accepted);
      return toolOutcomeText(choice, accepted);
    });
  }

  /** The answer to a tool server's question: the run has kept running, so there is nothing to resume or follow. */
  function answer(item: ApprovalItem, body: AnswerQuestionBody): Promise<void> {
    const question = item.tool_question;
    if (item.stop.kind !== 'question' || !question) return Promise.resolve();
    return send(item, 'answer', async () => {
      await stopsApi.answer(item.stop.id, body);
      answered.add(item.stop.id);
      items.value = items.value.filter((listed) => listed.stop.id !== item.stop.id);
      return answerOutcomeText(question, body);
    });
  }

  /** What a decision resumed: the thread's row says so, and the same run on screen goes on there too. */
  function resumed(accepted: RunAccepted): void {
    threads.track({ threadId: accepted.thread_id, runId: accepted.run_id, status: accepted.status });
    void runs.adopt(accepted);
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

  /**
   * Sends one decision or answer on an item (`taken` says what became of it); what became of it is kept with the item
   * and said at the top of the inbox.
   */
  async function send(item: ApprovalItem, what: 'decision' | 'answer', taken: () => Promise<string>): Promise<void> {
    const key = itemKey(item);
    const which = runLabel(item);
    busy.value = key;
    try {
      const text = await taken();
      results.value[key] = { ok: true, text };
      notice.value = {
        ok: true,
        text: `${which}: ${text}`,
        seq: (notice.value?.seq ?? 0) + 1,
      };
    } catch (e) {
      const text = `The ${what} was not taken: ${errorMessage(e)}`;
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

  /** The waiting question of stop `stopId`, as listed for this person; undefined when none is (or not yet). */
  const questionAt = (stopId: string) =>
    items.value.find((item) => item.stop.kind === 'question' && item.stop.id === stopId);

  // A decision from an approval card, a run of this studio reaching a gate, and a question asked or answered in a run
  // of this studio, change what waits.
  runs.onDecision(() => void refresh());
  runs.onGateWaiting(() => void refresh());
  runs.onQuestion(() => void refresh());
  threads.onRunSeen((seen) => {
    if (seen.status === 'waiting_approval') {
      movedOn.delete(seen.runId);
      return;
    }
    dropRun(seen.runId, seen.status);
    void refresh();
  });

  return {
    items,
    loaded,
    error,
    open,
    busy,
    results,
    notice,
    count,
    refresh,
    poll,
    decide,
    decideToolCall,
    answer,
    questionAt,
    show,
  };
});
