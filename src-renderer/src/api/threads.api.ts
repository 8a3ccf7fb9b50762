import {
  CheckpointSchema,
  RunAcceptedSchema,
  RunSchema,
  ThreadPageSchema,
  ThreadSchema,
  type CreateThread,
} from '@contracts/runs';
import { z } from 'zod';
import { api } from './http';

export const threadsApi = {
  /** A page of threads, of one project when `projectId` is given. */
  list: (limit: number, cursor?: string, projectId?: string | null) =>
    api(
      `/threads?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}${projectId ? `&project_id=${projectId}` : ''}`,
      {
        schema: ThreadPageSchema,
      },
    ),
  create: (body: CreateThread) => api('/threads', { method: 'POST', body, schema: ThreadSchema }),
  runs: (threadId: string) => api(`/threads/${threadId}/runs`, { schema: z.array(RunSchema) }),
  remove: (threadId: string) => api<void>(`/threads/${threadId}`, { method: 'DELETE' }),
  /** The thread's history: every checkpoint of its runs and branches, oldest first. */
  checkpoints: (threadId: string) => api(`/threads/${threadId}/checkpoints`, { schema: z.array(CheckpointSchema) }),
  /** Approves or rejects a pending gate: the answer says where to follow the resumed run from. */
  decideGate: (threadId: string, gate: string, approved: boolean, reason: string) =>
    api(`/threads/${threadId}/gates/${encodeURIComponent(gate)}/${approved ? 'approve' : 'reject'}`, {
      method: 'POST',
      body: { reason },
      schema: RunAcceptedSchema,
    }),
};
