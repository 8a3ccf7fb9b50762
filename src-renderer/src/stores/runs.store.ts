import { FINISHED_RUN_STATUSES } from '@contracts/runs';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { runsApi, threadsApi } from '../api/resources.api';
import { streamRun, type StreamedEvent } from '../api/sse-client';
import { applyEvent, emptyView, isStuck, viewFromDetail, type RunView } from './run-view';
import { useThreadsStore } from './threads.store';

/** The live run survives a page reload: its id is kept for this tab, and the studio re-attaches. */
const LIVE_RUN_KEY = 'svc.liveRun';

export interface RunRequestForm {
  agent: string;
  message: string;
  model?: string;
  projectPath?: string;
  threadId?: string;
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

  const stuck = computed(() => isStuck(view.value, now.value));
  const finished = computed(() => (FINISHED_RUN_STATUSES as readonly string[]).includes(view.value.status));

  function onEvent({ id, event }: StreamedEvent): void {
    applyEvent(view.value, event, id);
    if (event.type === 'run_start') sessionStorage.setItem(LIVE_RUN_KEY, event.run_id);
  }

  async function follow(path: string, init: { method?: string; body?: unknown; lastEventId?: number }): Promise<void> {
    controller?.abort();
    const current = new AbortController();
    controller = current;
    streaming.value = true;
    error.value = null;
    try {
      await streamRun(path, { ...init, signal: current.signal }, onEvent);
    } catch (e) {
      if (!current.signal.aborted) error.value = e instanceof Error ? e.message : String(e);
    } finally {
      if (controller === current) {
        streaming.value = false;
        controller = null;
      }
      if (view.value.status !== 'running') sessionStorage.removeItem(LIVE_RUN_KEY);
      void useThreadsStore().load().catch(() => undefined);
    }
  }

  async function start(form: RunRequestForm): Promise<void> {
    lastRequest.value = form;
    view.value = { ...emptyView(), message: form.message, projectPath: form.projectPath ?? null };
    await follow(`/graphs/${encodeURIComponent(form.agent)}/run`, {
      method: 'POST',
      body: {
        message: form.message,
        ...(form.model ? { model: form.model } : {}),
        ...(form.projectPath ? { project_path: form.projectPath } : {}),
        ...(form.threadId ? { thread_id: form.threadId } : {}),
      },
    });
  }

  /** Stop: the browser stream ends at once, and the run itself is cancelled when its id is known. */
  async function stop(): Promise<void> {
    controller?.abort();
    const runId = view.value.runId;
    if (runId) await cancel();
  }

  async function cancel(): Promise<void> {
    const runId = view.value.runId;
    if (!runId) return;
    try {
      await runsApi.cancel(runId, 'stopped from the studio');
    } catch (e) {
      error.value = e instanceof Error ? e.message : String(e);
    }
    await load(runId);
  }

  /** Same agent, model, project path and message, in a new thread: no checkpoint is reused. */
  async function rerun(): Promise<void> {
    const request = lastRequest.value ?? requestFromView();
    if (!request) return;
    await start({ ...request, threadId: undefined });
  }

  function requestFromView(): RunRequestForm | null {
    const v = view.value;
    if (!v.agent || !v.message) return null;
    return { agent: v.agent, message: v.message, model: v.model ?? undefined, projectPath: v.projectPath ?? undefined };
  }

  async function decide(approved: boolean, reason: string): Promise<void> {
    const { threadId, pendingGate } = view.value;
    if (!threadId || !pendingGate) return;
    await follow(`/threads/${threadId}/gates/${encodeURIComponent(pendingGate.node)}/${approved ? 'approve' : 'reject'}`, {
      method: 'POST',
      body: { reason },
    });
  }

  /** Shows a stored run; a run still going is followed from where the stored state ends. */
  async function load(runId: string): Promise<void> {
    const detail = await runsApi.detail(runId);
    view.value = viewFromDetail(detail);
    lastRequest.value = requestFromView();
    if (detail.status === 'running' && !streaming.value) {
      view.value = { ...viewFromDetail(detail), transcript: [], trail: [] };
      await follow(`/runs/${runId}/stream`, {});
    }
  }

  async function openThread(threadId: string): Promise<void> {
    controller?.abort();
    const runs = await threadsApi.runs(threadId);
    if (runs[0]) await load(runs[0].id);
    else view.value = { ...emptyView(), threadId };
  }

  async function resumeAfterReload(): Promise<void> {
    const runId = sessionStorage.getItem(LIVE_RUN_KEY);
    if (runId) await load(runId).catch(() => sessionStorage.removeItem(LIVE_RUN_KEY));
  }

  return { view, streaming, error, stuck, finished, lastRequest, start, stop, cancel, rerun, decide, load, openThread, resumeAfterReload };
});
