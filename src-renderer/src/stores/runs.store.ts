import { defineStore } from 'pinia';
import { computed, ref, watch } from 'vue';
import { stopsApi, type DecisionChoice, type ToolDecisionChoice } from '../api/stops.api';
import { runsApi } from '../api/runs.api';
import type { EventHandler } from '../api/sse-client';
import { threadsApi } from '../api/threads.api';
import { TokenBatcher } from './frame-batch';
import { followStream } from './follow';
import { sameStop } from './gate-decision';
import { eventsFromRows } from './events-from-rows';
import {
  applyEvent,
  applyEvents,
  emptyView,
  isStuck,
  recordedTranscript,
  runView,
  settle,
  StoredPhases,
  type RunView,
} from './run-view';
import { useThreadsStore } from './threads.store';
import { errorMessage } from '@contracts/errors';
import type { ForkRequest, MultitaskStrategy, RunAccepted } from '@contracts/runs';

/** The live run survives a page reload: its id is kept for this tab, and the studio re-attaches. */
const LIVE_RUN_KEY = 'svc.liveRun';

export interface RunRequestForm {
  agent: string;
  message: string;
  model?: string;
  projectPath?: string;
  threadId?: string;
  /** The project of a new thread; without it the server takes the caller's only project (or asks which). */
  projectId?: string;
  /** What to do when the thread is busy (queue, interrupt, roll back); the server rejects by default. */
  strategy?: MultitaskStrategy;
  /** The new thread's name, when it is not to be its message (a rerun says it is one). */
  name?: string;
}

/** A rerun's thread is named after the thread it reruns, and says it is a rerun: the two rows differ. */
export const rerunName = (name: string) => `${name.replace(/ \(rerun\)$/, '').slice(0, 190)} (rerun)`;

type Open = (signal: AbortSignal, onEvent: EventHandler) => Promise<unknown>;

/**
 * How often a gate on screen is checked while nothing streams: another person may approve it (a gate that needs
 * several approvals), or decide it from their inbox, and no stream tells this studio.
 */
export const GATE_CHECK_MS = 3000;

/**
 * How long the stored events of a run that rests (ended, or waiting at a gate) are read before it is shown: it
 * appears whole. A replay still going after that is of a run resumed meanwhile, shown and followed on live.
 */
const REPLAY_HOLD_MS = 1000;

interface FollowOptions {
  /** The stored rows of the run's phases, for a stream that replays it from an earlier event (StoredPhases). */
  phases?: StoredPhases;
}

/** A run of the studio's stream stopped at a gate. */
export interface GateReached {
  threadId: string;
  runId: string;
  agent: string | null;
  node: string;
  question: string;
}

/** The run on screen: what its stream said so far, and the actions on it. */
export const useRunsStore = defineStore('runs', () => {
  const view = ref<RunView>(emptyView());
  const lastRequest = ref<RunRequestForm | null>(null);
  const streaming = ref(false);
  const error = ref<string | null>(null);
  /** Counts the threads a person opened (not those a run started): the run form resets itself on each. */
  const openedThreads = ref(0);
  const now = ref(Date.now());
  setInterval(() => (now.value = Date.now()), 5000);
  let controller: AbortController | null = null;
  const gateListeners = new Set<(gate: GateReached) => void>();
  /** Counts the requests to bring the approval card forward (a notification was clicked). */
  const approvalRequested = ref(0);
  /** A decision is being sent from the approval card. */
  const deciding = ref(false);
  /** Why the last decision on the run on screen was refused (decided already, approved twice, role too low). */
  const decisionError = ref<string | null>(null);
  const decisionListeners = new Set<() => void>();
  const questionListeners = new Set<() => void>();

  // The rule is the same whether or not the stream is live: still running two minutes after it started.
  const stuck = computed(() => isStuck(view.value, now.value));

  /**
   * Follows one stream into the view, re-attaching where it dropped (followStream). Tokens reach the view at most
   * once per animation frame (TokenBatcher); every other event at once. When the run rests (ended, or stopped at a
   * gate, which is then announced), its stored record settles the view: figures as the server measured them,
   * decisions as recorded.
   */
  async function follow(open: Open, options: FollowOptions = {}): Promise<void> {
    controller?.abort();
    const current = new AbortController();
    controller = current;
    streaming.value = true;
    error.value = null;
    const batcher = new TokenBatcher((events) => {
      // A stream given up (Stop, another thread opened) changes nothing any more, whatever it still held.
      if (current.signal.aborted) return;
      applyEvents(view.value, events, (into, event, id) => {
        if (options.phases) options.phases.apply(into, event, id);
        else applyEvent(into, event, id);
        if (event.type === 'run_start' || event.type === 'run_queued')
          sessionStorage.setItem(LIVE_RUN_KEY, event.run_id);
        if (event.type === 'tool_question' || event.type === 'tool_question_answered')
          for (const listener of questionListeners) listener();
      });
      report();
    });
    try {
      await followStream({
        open,
        attach: runsApi.attach,
        // The stream cannot be followed any more: what is stored is shown, and not followed again.
        reload: (runId) => load(runId, false),
        onEvent: (e) => batcher.push(e),
        flush: () => batcher.flush(),
        position: () => ({ runId: view.value.runId, lastEventId: view.value.lastEventId }),
        signal: current.signal,
      });
    } catch (e) {
      if (!current.signal.aborted) error.value = errorMessage(e);
    } finally {
      batcher.flush();
      if (controller === current) {
        streaming.value = false;
        controller = null;
      }
      if (view.value.status !== 'running' && view.value.status !== 'queued') sessionStorage.removeItem(LIVE_RUN_KEY);
      // Never throws: a failed reload is shown above the thread list with a Retry.
      void useThreadsStore().load();
    }
    if (current.signal.aborted) return;
    announceGate();
    if (view.value.runId && view.value.status !== 'running' && view.value.status !== 'queued') await settleStored();
  }

  /** The status of the run on screen, when it changed: its thread's row in the list says it at once. */
  let reported: string | null = null;
  /** A name for the thread of the run being started, given once the run says which thread it is in. */
  let nameNewThread: string | null = null;
  function report(): void {
    const { threadId, runId, status, message } = view.value;
    if (!threadId || !runId || status === 'idle' || reported === `${runId}:${status}`) return;
    reported = `${runId}:${status}`;
    useThreadsStore().track({ threadId, runId, status, message });
    if (nameNewThread) {
      const name = nameNewThread;
      nameNewThread = null;
      useThreadsStore()
        .rename(threadId, name)
        .catch((e) => (error.value = `The rerun's thread could not be named: ${errorMessage(e)}`));
    }
  }

  /** The run on screen stopped at a gate: told to the listeners (the inbox, the notification). */
  function announceGate(): void {
    const { threadId, runId, agent, status, pendingGate } = view.value;
    if (status !== 'waiting_approval' || !threadId || !runId || !pendingGate) return;
    for (const listener of gateListeners)
      listener({ threadId, runId, agent, node: pendingGate.node, question: pendingGate.question });
  }

  /** The stored record of the run on screen, once it rests. */
  async function settleStored(): Promise<void> {
    const runId = view.value.runId;
    const detail = await runsApi.detail(runId!).catch(() => null);
    if (detail && view.value.runId === runId) settle(view.value, detail);
  }

  async function start(form: RunRequestForm): Promise<void> {
    lastRequest.value = form;
    decisionError.value = null;
    nameNewThread = !form.threadId && form.name ? form.name : null;
    view.value = { ...emptyView(), agent: form.agent, message: form.message, projectPath: form.projectPath ?? null };
    const threadId = form.threadId;
    const body = {
      message: form.message,
      ...(form.model ? { model: form.model } : {}),
      ...(form.projectPath ? { project_path: form.projectPath } : {}),
      // A new thread goes to the project chosen in the switcher; a thread keeps its own.
      ...(threadId ? { thread_id: threadId } : form.projectId ? { project_id: form.projectId } : {}),
      ...(threadId && form.strategy ? { multitask_strategy: form.strategy } : {}),
    };
    await follow((signal, onEvent) => runsApi.start(form.agent, body, signal, onEvent));
  }

  /**
   * Starts a run on a branch of the thread on screen, from one of its checkpoints (message, model or a phase's output
   * edited), and follows it as a new run.
   */
  async function fork(
    threadId: string,
    checkpointId: string,
    body: ForkRequest,
    fromRun: string | null = null,
  ): Promise<void> {
    const { agent, projectPath } = view.value;
    lastRequest.value = null;
    decisionError.value = null;
    const forkedFrom = { runId: fromRun, checkpointId };
    view.value = { ...emptyView(), agent, threadId, message: body.message ?? null, projectPath, forkedFrom };
    await follow((signal, onEvent) => runsApi.fork(threadId, checkpointId, body, signal, onEvent));
  }

  /** Stop: the browser stream ends at once, and the run itself is cancelled when its id is known. */
  /** The stream on screen, stopped: the run is cancelled, saying it was stopped while it wrote. */
  async function stop(): Promise<void> {
    controller?.abort();
    if (view.value.runId) await cancel('Stop pressed while it streamed');
  }

  /** The run on screen, cancelled without a stream to stop (it waits for approval, or runs unfollowed here). */
  async function cancel(
    reason = view.value.status === 'waiting_approval'
      ? 'Cancel run pressed while it waited for approval'
      : 'Cancel run pressed',
  ): Promise<void> {
    const runId = view.value.runId;
    if (!runId) return;
    try {
      const accepted = await runsApi.cancel(runId, reason);
      useThreadsStore().track({ threadId: accepted.thread_id, runId, status: accepted.status });
    } catch (e) {
      error.value = errorMessage(e);
    }
    await load(runId);
  }

  /** Same agent, model, project path and message, in a new thread: no checkpoint is reused. */
  async function rerun(): Promise<void> {
    const request = lastRequest.value ?? requestFromView();
    if (!request) return;
    const from = useThreadsStore().threads.find((t) => t.id === view.value.threadId);
    await start({ ...request, threadId: undefined, name: rerunName(from?.name ?? request.message) });
  }

  function requestFromView(v = view.value): RunRequestForm | null {
    if (!v.agent || !v.message) return null;
    return { agent: v.agent, message: v.message, model: v.model ?? undefined, projectPath: v.projectPath ?? undefined };
  }

  /** Approve, edit, respond or reject at the gate on screen. */
  async function decide(decision: DecisionChoice): Promise<void> {
    const stop = view.value.stop;
    if (stop?.kind === 'gate') await send(() => stopsApi.decide(stop, decision));
  }

  /** Approve (with edited arguments or not), respond to or reject the tool call the run on screen waits at. */
  async function decideToolCall(choice: ToolDecisionChoice): Promise<void> {
    const stop = view.value.stop;
    if (stop?.kind === 'tool_call') await send(() => stopsApi.decide(stop, choice));
  }

  /** Sends a decision on the stop on screen; a refusal is shown on the card, with what is stored. */
  async function send(decision: (threadId: string) => Promise<RunAccepted>): Promise<void> {
    const { threadId, runId } = view.value;
    if (!threadId || !runId || deciding.value) return;
    deciding.value = true;
    decisionError.value = null;
    let accepted: RunAccepted;
    try {
      accepted = await decision(threadId);
    } catch (e) {
      decisionError.value = `The decision was not taken: ${errorMessage(e)}`;
      // Decided elsewhere in the meantime, or its checkpoint is gone: show what is stored.
      await load(runId).catch(() => undefined);
      return;
    } finally {
      deciding.value = false;
      for (const listener of decisionListeners) listener();
    }
    await adopt(accepted);
  }

  /**
   * What a decision answered, for the run on screen (taken here, or in the inbox): an approval that leaves the gate
   * short of the approvals it needs keeps the run waiting, with nothing to stream; anything else resumed the run,
   * which is followed from the gate on, like any re-attach.
   */
  async function adopt(accepted: RunAccepted): Promise<void> {
    if (view.value.runId !== accepted.run_id) return;
    if (accepted.status === 'waiting_approval' && accepted.approvals) {
      view.value.approvals = accepted.approvals;
      return;
    }
    // Already followed (the gate check saw it resume first): that stream carries the decision and what follows.
    if (streaming.value) return;
    await follow((signal, onEvent) => runsApi.attach(accepted.run_id, accepted.last_event_id, signal, onEvent));
  }

  /**
   * While a gate waits on screen and nothing streams, its stored state is checked now and then: approvals given by
   * others show as they come, and a gate decided elsewhere shows the run going on (followed from its stored state).
   */
  let gateTimer: ReturnType<typeof setInterval> | undefined;
  watch(
    () =>
      view.value.status === 'waiting_approval' && view.value.resumable && !streaming.value ? view.value.runId : null,
    (runId) => {
      clearInterval(gateTimer);
      if (runId) gateTimer = setInterval(() => void checkGate(runId), GATE_CHECK_MS);
    },
  );

  async function checkGate(runId: string): Promise<void> {
    const detail = await runsApi.detail(runId).catch(() => null);
    const unchanged = () =>
      view.value.runId === runId && view.value.status === 'waiting_approval' && !streaming.value && !deciding.value;
    if (!detail || !unchanged()) return;
    if (detail.status === 'waiting_approval' && sameStop(view.value.pendingGate, detail.pending_gate)) {
      view.value.decisions = detail.decisions;
      view.value.approvals = detail.approvals;
      // A message posted meanwhile (or that failed): "sending…" becomes where it went.
      view.value.sentTo = detail.sent_to;
      return;
    }
    // Decided elsewhere (or by its deadline): what waits, and the thread's status in the list, changed too.
    for (const listener of decisionListeners) listener();
    void useThreadsStore().load();
    await load(runId);
  }

  /** Listens for every decision sent from the approval card, taken or refused, and for one seen taken elsewhere. */
  function onDecision(listener: () => void): void {
    decisionListeners.add(listener);
  }

  /**
   * Shows a stored run as its events tell it, folded as they were live: a run still going is followed on from its
   * first event (unless `follows` is false), one that rests is read whole first. A run whose events are gone (pruned
   * after RUN_EVENTS_RETENTION_DAYS: its stream has nothing) is told from its node rows and decisions instead.
   */
  async function load(runId: string, follows = true): Promise<void> {
    controller?.abort();
    const current = new AbortController();
    controller = current;
    // A stream this replaces (a re-attach that gave up, another thread) no longer says whether one is followed.
    streaming.value = false;
    const detail = await runsApi.detail(runId);
    if (current.signal.aborted) return;
    const stored = runView(detail);
    const phases = new StoredPhases(detail.nodes);
    lastRequest.value = requestFromView(stored);
    if (detail.status === 'running' && follows) {
      view.value = stored;
      await follow((signal, onEvent) => runsApi.attach(runId, 0, signal, onEvent), { phases });
      return;
    }
    const replay = await readStored(runId, stored, phases, current.signal);
    if (replay === 'aborted') return;
    if (replay === 'going on' && follows) {
      view.value = stored;
      const after = stored.lastEventId;
      await follow((signal, onEvent) => runsApi.attach(runId, after, signal, onEvent), { phases });
      return;
    }
    if (replay === 'empty') for (const event of eventsFromRows(detail)) applyEvent(stored, event, 0);
    settle(stored, detail);
    view.value = stored;
    report();
  }

  /**
   * Folds the stored events of a run into `into` until its stream ends, or for REPLAY_HOLD_MS: 'going on' when the
   * stream still goes (the run was resumed meanwhile), 'empty' when it had no event at all.
   */
  async function readStored(
    runId: string,
    into: RunView,
    phases: StoredPhases,
    signal: AbortSignal,
  ): Promise<'read' | 'empty' | 'going on' | 'aborted'> {
    const reading = new AbortController();
    const stop = () => reading.abort();
    signal.addEventListener('abort', stop);
    let held = false;
    const timer = setTimeout(() => {
      held = true;
      reading.abort();
    }, REPLAY_HOLD_MS);
    let events = 0;
    try {
      await runsApi.attach(runId, 0, reading.signal, ({ id, event }) => {
        phases.apply(into, event, id);
        events++;
      });
    } catch (e) {
      if (!reading.signal.aborted) throw e;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    }
    if (signal.aborted) return 'aborted';
    if (held) return 'going on';
    return events > 0 ? 'read' : 'empty';
  }

  async function openThread(threadId: string): Promise<void> {
    controller?.abort();
    error.value = null;
    decisionError.value = null;
    const runs = await threadsApi.runs(threadId);
    if (runs[0]) await load(runs[0].id);
    else view.value = { ...emptyView(), threadId };
    openedThreads.value++;
  }

  async function resumeAfterReload(): Promise<void> {
    const runId = sessionStorage.getItem(LIVE_RUN_KEY);
    if (runId) await load(runId).catch(() => sessionStorage.removeItem(LIVE_RUN_KEY));
  }

  /**
   * Listens for a tool server's question asked or answered in a followed run: the run keeps running and its stream
   * goes on, so no gate listener hears of it.
   */
  function onQuestion(listener: () => void): void {
    questionListeners.add(listener);
  }

  /** Listens for a followed run stopping at a gate (not for a stored one being shown). */
  function onGateWaiting(listener: (gate: GateReached) => void): void {
    gateListeners.add(listener);
  }

  function showApproval(): void {
    approvalRequested.value++;
  }

  function clear(): void {
    controller?.abort();
    view.value = emptyView();
    lastRequest.value = null;
    error.value = null;
    decisionError.value = null;
  }

  /** The transcript on screen, each decision as recorded once the record is read. */
  const transcript = computed(() => recordedTranscript(view.value));

  return {
    view,
    transcript,
    streaming,
    error,
    openedThreads,
    stuck,
    lastRequest,
    start,
    fork,
    stop,
    cancel,
    rerun,
    decide,
    decideToolCall,
    deciding,
    decisionError,
    adopt,
    onDecision,
    load,
    openThread,
    resumeAfterReload,
    clear,
    onGateWaiting,
    onQuestion,
    approvalRequested,
    showApproval,
  };
});
