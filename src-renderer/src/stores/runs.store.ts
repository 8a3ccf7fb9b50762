import { TERMINAL_EVENTS } from '@contracts/events';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { runsApi } from '../api/runs.api';
import type { EventHandler, StreamedEvent } from '../api/sse-client';
import { threadsApi } from '../api/threads.api';
import { applyEvent, emptyView, isStuck, viewFromDetail, type RunView } from './run-view';
import { useThreadsStore } from './threads.store';
import { errorMessage } from '@contracts/errors';

/** The live run survives a page reload: its id is kept for this tab, and the studio re-attaches. */
const LIVE_RUN_KEY = 'svc.liveRun';

/** A dropped stream is re-attached this many times in a row before the studio says it failed. */
const RECONNECT_ATTEMPTS = 10;

export interface RunRequestForm {
  agent: string;
  message: string;
  model?: string;
  projectPath?: string;
  threadId?: string;
  /** The project of a new thread; without it the server takes the caller's only project (or asks which). */
  projectId?: string;
}

type Open = (signal: AbortSignal, onEvent: EventHandler) => Promise<void>;

/** The run on screen: what its stream said so far, and the actions on it. */
export const useRunsStore = defineStore('runs', () => {
  const view = ref<RunView>(emptyView());
  const lastRequest = ref<RunRequestForm | null>(null);
  const streaming = ref(false);
  const error = ref<string | null>(null);
  const now = ref(Date.now());
  setInterval(() => (now.value = Date.now()), 5000);
  let controller: AbortController | null = null;

  // The rule is the same whether or not the stream is live: still running two minutes after it started.
  const stuck = computed(() => isStuck(view.value, now.value));

  /**
   * Follows one stream into the view. A stream that drops before the run ended (a proxy, a sleeping laptop,
   * a server that went away) is picked up again where it stopped: any server re-attaches after the last
   * event id seen, with the same ids and nothing missed or repeated.
   */
  async function follow(open: Open): Promise<void> {
    controller?.abort();
    const current = new AbortController();
    controller = current;
    streaming.value = true;
    error.value = null;
    let ended = false;
    const onEvent = ({ id, event }: StreamedEvent) => {
      applyEvent(view.value, event, id);
      if (event.type === 'run_start') sessionStorage.setItem(LIVE_RUN_KEY, event.run_id);
      if (TERMINAL_EVENTS.includes(event.type)) ended = true;
    };
    try {
      await open(current.signal, onEvent);
      let quiet = 0;
      for (let attempt = 1; !ended && !current.signal.aborted && view.value.runId; attempt++) {
        const runId = view.value.runId;
        if (attempt > RECONNECT_ATTEMPTS || quiet >= 2) {
          // No server can reach it, or it ends without a last event (a run nobody executes any more):
          // show what is stored.
          await load(runId);
          break;
        }
        // Quickly at first; a server that is away for longer is asked less often.
        await new Promise((resolve) => setTimeout(resolve, Math.min(500 * attempt, 5000)));
        if (current.signal.aborted) break;
        const seen = view.value.lastEventId;
        const answered = await runsApi.attach(runId, seen, current.signal, onEvent).then(
          () => true,
          () => false,
        );
        if (view.value.lastEventId > seen) attempt = quiet = 0;
        else if (answered) quiet++;
      }
    } catch (e) {
      if (!current.signal.aborted) error.value = errorMessage(e);
    } finally {
      if (controller === current) {
        streaming.value = false;
        controller = null;
      }
      if (view.value.status !== 'running') sessionStorage.removeItem(LIVE_RUN_KEY);
      // Never throws: a failed reload is shown above the thread list with a Retry.
      void useThreadsStore().load();
    }
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
    stop,
    cancel,
    rerun,
    decide,
    load,
    openThread,
    resumeAfterReload,
    clear,
  };
});
