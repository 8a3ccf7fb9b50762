import {
  CheckpointSchema,
  GateDecisionRecordSchema,
  RunSchema,
  ThreadPageSchema,
  ThreadSchema,
  type CreateThread,
  type RenameThread,
} from '@contracts/runs';
import { z } from 'zod';
import { api } from './http';
import { threadListQuery, type ThreadListFilter } from './thread-query';

export const threadsApi = {
  /**
   * A page of threads, of one project when `projectId` is given, narrowed by `filter` (words, agent, status, who
   * started it, when last active): the server searches, the studio only shows what it answers.
   */
  list: (limit: number, cursor?: string | null, projectId?: string | null, filter?: ThreadListFilter) =>
    api(`/threads?${threadListQuery(limit, cursor, projectId, filter)}`, { schema: ThreadPageSchema }),
  create: (body: CreateThread) => api('/threads', { method: 'POST', body, schema: ThreadSchema }),
  /** A person's name for the thread; runs never change it. */
  rename: (threadId: string, name: string) =>
    api(`/threads/${threadId}`, { method: 'PATCH', body: { name } satisfies RenameThread, schema: ThreadSchema }),
  runs: (threadId: string) => api(`/threads/${threadId}/runs`, { schema: z.array(RunSchema) }),
  remove: (threadId: string) => api<void>(`/threads/${threadId}`, { method: 'DELETE' }),
  /** The thread's history: every checkpoint of its runs and branches, oldest first. */
  checkpoints: (threadId: string) => api(`/threads/${threadId}/checkpoints`, { schema: z.array(CheckpointSchema) }),
  /** Every decision taken at the thread's gates, oldest first: who, with which role, when, and what. */
  decisions: (threadId: string) => api(`/threads/${threadId}/decisions`, { schema: z.array(GateDecisionRecordSchema) }),
};
