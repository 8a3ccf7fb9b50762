import type { CreateThread, Run, Thread, ThreadPage } from '@contracts/runs';
import { api } from './http';
import { openEventStream, type EventHandler } from './sse-client';

export const threadsApi = {
  /** A page of threads, of one project when `projectId` is given. */
  list: (limit: number, cursor?: string, projectId?: string | null) =>
    api<ThreadPage>(
      `/threads?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}${projectId ? `&project_id=${projectId}` : ''}`,
    ),
  create: (body: CreateThread) => api<Thread>('/threads', { method: 'POST', body }),
  runs: (threadId: string) => api<Run[]>(`/threads/${threadId}/runs`),
  remove: (threadId: string) => api<void>(`/threads/${threadId}`, { method: 'DELETE' }),
  /** Approves or rejects a pending gate and follows the resumed run's stream until it ends. */
  decideGate: (
    threadId: string,
    gate: string,
    approved: boolean,
    reason: string,
    signal: AbortSignal,
    onEvent: EventHandler,
  ) =>
    openEventStream(
      `/threads/${threadId}/gates/${encodeURIComponent(gate)}/${approved ? 'approve' : 'reject'}`,
      { method: 'POST', body: { reason }, signal },
      onEvent,
    ),
};
