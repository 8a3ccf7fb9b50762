import { RunAcceptedSchema, RunDetailSchema, type ForkRequest, type RunRequest } from '@contracts/runs';
import { api } from './http';
import { openEventStream, type EventHandler } from './sse-client';

export const runsApi = {
  /** Starts a run of an agent or command and follows its stream until it ends or stops at a gate. */
  start: (agent: string, body: RunRequest, signal: AbortSignal, onEvent: EventHandler) =>
    openEventStream(`/graphs/${encodeURIComponent(agent)}/run`, { method: 'POST', body, signal }, onEvent),
  /** Starts a run on a branch of the thread, from one of its checkpoints, and follows its stream as start() does. */
  fork: (threadId: string, checkpointId: string, body: ForkRequest, signal: AbortSignal, onEvent: EventHandler) =>
    openEventStream(
      `/threads/${threadId}/checkpoints/${encodeURIComponent(checkpointId)}/run`,
      { method: 'POST', body, signal },
      onEvent,
    ),
  /** Re-attaches to a run's stream: everything after `lastEventId`, or the whole run. */
  attach: (runId: string, lastEventId: number, signal: AbortSignal, onEvent: EventHandler) =>
    openEventStream(`/runs/${runId}/stream`, { lastEventId, signal }, onEvent),
  detail: (runId: string) => api(`/runs/${runId}`, { schema: RunDetailSchema }),
  cancel: (runId: string, reason: string) =>
    api(`/runs/${runId}/cancel`, { method: 'POST', body: { reason }, schema: RunAcceptedSchema }),
};
