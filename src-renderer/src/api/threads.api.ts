import type { CreateThread, Run, RunAccepted, Thread, ThreadPage } from '@contracts/runs';
import { api } from './http';

export const threadsApi = {
  /** A page of threads, of one project when `projectId` is given. */
  list: (limit: number, cursor?: string, projectId?: string | null) =>
    api<ThreadPage>(
      `/threads?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}${projectId ? `&project_id=${projectId}` : ''}`,
    ),
  create: (body: CreateThread) => api<Thread>('/threads', { method: 'POST', body }),
  runs: (threadId: string) => api<Run[]>(`/threads/${threadId}/runs`),
  remove: (threadId: string) => api<void>(`/threads/${threadId}`, { method: 'DELETE' }),
  /** Approves or rejects a pending gate: the answer says where to follow the resumed run from. */
  decideGate: (threadId: string, gate: string, approved: boolean, reason: string) =>
    api<RunAccepted>(`/threads/${threadId}/gates/${encodeURIComponent(gate)}/${approved ? 'approve' : 'reject'}`, {
      method: 'POST',
      body: { reason },
    }),
};
