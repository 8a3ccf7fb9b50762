import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { runsApi } from '../api/runs.api';
import type { EventHandler } from '../api/sse-client';
import { threadsApi } from '../api/threads.api';
import { TokenBatcher } from './frame-batch';
import { followStream } from './follow';
import { applyEvent, emptyView, figuresFromNode, isStuck, viewFromDetail, type RunView } from './run-view';
import { useThreadsStore } from './threads.store';
import { errorMessage } from '@contracts/errors';
import type { ForkRequest } from '@contracts/runs';

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
}

type Open = (signal: AbortSignal, onEvent: EventHandler) => Promise<unknown>;

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
  const now = ref(Date.now());
  setInterval(() => (now.value = Date.now()), 5000);
  let controller: AbortController | null = null;
  const gateListeners = new Set<(gate: GateReached) => void>();
  /** Counts the requests to bring the approval card forward (a notification was clicked). */
  const approvalRequested = ref(0);

  // The rule is the same whether or not the stream is live: still running two minutes after it started.
  const stuck = computed(() => isStuck(view.value, now.value));

  /**
   * Follows one stream into the view, re-attaching where it dropped (followStream). Tokens reach the view at most
   * once per animation frame (TokenBatcher); every other event at once. When the run ended live, the stored
   * figures of its phases (durations, queue waits, token counts) replace those measured while it streamed.
   */
  async function follow(open: Open): Promise<void> {
    controller?.abort();
    const current = new AbortController();
    controller = current;
    streaming.value = true;
    error.value = null;
    const batcher = new TokenBatcher((events) => {
      // A stream given up (Stop, another thread opened) changes nothing any more, whatever it still held.
      if (current.signal.aborted) return;
      for (const { id, event } of events) {
        applyEvent(view.value, event, id);
        if (event.type === 'run_start') sessionStorage.setItem(LIVE_RUN_KEY, event.run_id);
        const { threadId, runId, agent } = view.value;
        if (event.type === 'gate_waiting' && threadId && runId)
          for (const listener of gateListeners)
            listener({ threadId, runId, agent, node: event.node, question: event.question });
      }
    });
    try {
      await followStream({
        open,
        attach: runsApi.attach,
        reload: load,
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
      if (view.value.status !== 'running') sessionStorage.removeItem(LIVE_RUN_KEY);
      // Never throws: a failed reload is shown above the thread list with a Retry.
      void useThreadsStore().load();
    }
    if (!current.signal.aborted && view.value.runId && view.value.status !== 'running') await storedFigures();
  }

  /** The server's figures of the run on screen, once its phases have ended. */
  async function storedFigures(): Promise<void> {
    const runId = view.value.runId;
    const detail = await runsApi.detail(runId!).catch(() => null);
    if (!detail || view.value.runId !== runId) return;
    for (const node of detail.nodes) view.value.figures[node.node_id] = figuresFromNode(node);
  }

  async function start(form: RunRequestForm): Promise<void> {
    lastRequest.value = form;
    view.value = { ...emptyView(), agent: form.agent, message: form.message, projectPath: form.projectPath ?? null };
    const threadId = form.threadId;
    const body = {
      message: form.message,
      ...(form.model ? { model: form.model } : {}),
      ...(form.projectPath ? { project_path: form.projectPath } : {}),
      // A new thread goes to the project chosen in the switcher; a thread keeps its own.
      ...(threadId ? { thread_id: threadId } : form.projectId ? { project_id: form.projectId } : {}),
    };
    await follow((signal, onEvent) => runsApi.start(form.agent, body, signal, onEvent));
  }

  /**
   * Starts a run on a branch of the thread on screen, from one of its checkpoints (message, model or a phase's output
   * edited), and follows it as a new run.
   */
  async function fork(threadId: string, checkpointId: string, body: ForkRequest): Promise<void> {
    const { agent, projectPath } = view.value;
    lastRequest.value = null;
    view.value = { ...emptyView(), agent, threadId, message: body.message ?? null, projectPath };
    await follow((signal, onEvent) => runsApi.fork(threadId, checkpointId, body, signal, onEvent));
  }

  /** Stop: the browser stream ends at once, and the run itself is cancelled when its id is known. */
  async function stop(): Promise<void> {
    controller?.abort();
    if (view.value.runId) await cancel();
  }

  async function cancel(): Promise<void> {
    const runId = view.value.runId;
    if (!runId) return;
    try {
      await runsApi.cancel(runId, 'stopped from the studio');
    } catch (e) {
      error.value = errorMessage(e);
    }
    await load(runId);
  }

  /** Same agent, model, project path and message, in a new thread: no checkpoint is reused. */
  async function rerun(): Promise<void> {
    const request = lastRequest.value ?? requestFromView();
    if (request) await start({ ...request, threadId: undefined });
  }

  function requestFromView(): RunRequestForm | null {
    const v = view.value;
    if (!v.agent || !v.message) return null;
    return { agent: v.agent, message: v.message, model: v.model ?? undefined, projectPath: v.projectPath ?? undefined };
  }

  async function decide(approved: boolean, reason: string): Promise<void> {
    const { threadId, runId, pendingGate } = view.value;
    if (!threadId || !pendingGate) return;
    // The decision answers JSON; the resumed run is then followed from the gate on, like any re-attach.
    await follow(async (signal, onEvent) => {
      const accepted = await threadsApi.decideGate(threadId, pendingGate.node, approved, reason);
      if (!signal.aborted) await runsApi.attach(accepted.run_id, accepted.last_event_id, signal, onEvent);
    });
    // A refused decision (the gate was decided elsewhere, or its checkpoint is gone): show what is stored.
    if (error.value && runId) await load(runId).catch(() => undefined);
  }

  /** Shows a stored run; a run still going is followed from the start of its stream. */
  async function load(runId: string): Promise<void> {
    const detail = await runsApi.detail(runId);
    view.value = viewFromDetail(detail);
    lastRequest.value = requestFromView();
    if (detail.status === 'running' && !streaming.value) {
      // The stream replays every event, so the stored trail and output would otherwise appear twice.
      view.value = { ...view.value, transcript: [], trail: [] };
      await follow((signal, onEvent) => runsApi.attach(runId, 0, signal, onEvent));
    }
  }

  async function openThread(threadId: string): Promise<void> {
    controller?.abort();
    error.value = null;
    const runs = await threadsApi.runs(threadId);
    if (runs[0]) await load(runs[0].id);
    else view.value = { ...emptyView(), threadId };
  }

  async function resumeAfterReload(): Promise<void> {
    const runId = sessionStorage.getItem(LIVE_RUN_KEY);
    if (runId) await load(runId).catch(() => sessionStorage.removeItem(LIVE_RUN_KEY));
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
  }

  return {
    view,
    streaming,
    error,
    stuck,
    lastRequest,
    start,
    fork,
    stop,
    cancel,
    rerun,
    decide,
    load,
    openThread,
    resumeAfterReload,
    clear,
    onGateWaiting,
    approvalRequested,
    showApproval,
  };
});
