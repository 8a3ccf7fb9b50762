import { errorMessage } from '@contracts/errors';
import type { RunAccepted } from '@contracts/runs';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { agentsApi } from '../api/agents.api';
import { runsApi } from '../api/runs.api';
import type { EventHandler } from '../api/sse-client';
import { stopsApi } from '../api/stops.api';
import { followStream } from './follow';
import { TokenBatcher } from './frame-batch';
import { applyEvents, emptyView, recordedTranscript, settle, type RunView } from './run-view';

/**
 * A try of the source in the agent editor: a draft run of the unsaved text, in a thread of its own that the thread
 * list leaves out. It is followed as the studio follows any run (its stream, re-attached where it drops, its stored
 * record once it rests), into a view of its own: the run on the studio's canvas stays as it was. At a gate the
 * person trying it approves or rejects, and the run goes on.
 */
export const useDraftRunStore = defineStore('draft-run', () => {
  const view = ref<RunView>(emptyView());
  const streaming = ref(false);
  const error = ref<string | null>(null);
  /** A decision at the gate is on its way. */
  const deciding = ref(false);
  let controller: AbortController | null = null;

  async function follow(accepted: RunAccepted): Promise<void> {
    controller?.abort();
    const current = new AbortController();
    controller = current;
    streaming.value = true;
    error.value = null;
    const batcher = new TokenBatcher((events) => {
      if (!current.signal.aborted) applyEvents(view.value, events);
    });
    const attach = (signal: AbortSignal, onEvent: EventHandler) =>
      runsApi.attach(accepted.run_id, accepted.last_event_id, signal, onEvent);
    try {
      await followStream({
        open: attach,
        attach: runsApi.attach,
        reload: () => settleStored(accepted.run_id),
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
    }
    if (!current.signal.aborted && !['running', 'queued'].includes(view.value.status))
      await settleStored(accepted.run_id);
  }

  /** The stored record of the draft once it rests: figures as measured, decisions as recorded. */
  async function settleStored(runId: string): Promise<void> {
    const detail = await runsApi.detail(runId).catch(() => null);
    if (detail && view.value.runId === runId) settle(view.value, detail);
  }

  /** Starts a draft run of `source` on `message` in the project, and follows it. */
  async function start(projectId: string, agent: string | null, source: string, message: string): Promise<void> {
    controller?.abort();
    error.value = null;
    view.value = { ...emptyView(), agent, message };
    let accepted: RunAccepted;
    try {
      accepted = await agentsApi.tryDraft(projectId, { source, message });
    } catch (e) {
      error.value = `The draft could not be started: ${errorMessage(e)}`;
      return;
    }
    view.value.runId = accepted.run_id;
    view.value.threadId = accepted.thread_id;
    await follow(accepted);
  }

  /** Approve or reject at the gate the draft waits at; an approval the gate needs more of keeps it waiting. */
  async function decide(kind: 'approve' | 'reject'): Promise<void> {
    const { threadId, stop } = view.value;
    if (!threadId || stop?.kind !== 'gate' || deciding.value) return;
    deciding.value = true;
    error.value = null;
    try {
      const accepted = await stopsApi.decide(stop, { kind });
      if (accepted.status === 'waiting_approval' && accepted.approvals) view.value.approvals = accepted.approvals;
      else void follow(accepted);
    } catch (e) {
      error.value = `The decision was not taken: ${errorMessage(e)}`;
    } finally {
      deciding.value = false;
    }
  }

  /** Stop: the stream ends at once, and the draft run is cancelled. */
  async function stop(): Promise<void> {
    controller?.abort();
    const runId = view.value.runId;
    if (!runId) return;
    try {
      await runsApi.cancel(runId, 'draft stopped in the agent editor');
    } catch (e) {
      error.value = errorMessage(e);
    }
    await settleStored(runId);
  }

  /** Another agent opened: what was tried with the last one is no longer shown. */
  function clear(): void {
    controller?.abort();
    view.value = emptyView();
    error.value = null;
  }

  const transcript = computed(() => recordedTranscript(view.value));

  return { view, streaming, error, deciding, transcript, start, decide, stop, clear };
});
