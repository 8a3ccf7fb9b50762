import {
  CheckpointSchema,
  GateDecisionRecordSchema,
  RunAcceptedSchema,
  RunSchema,
  ThreadPageSchema,
  ThreadSchema,
  type ApproveBody,
  type CreateThread,
  type RenameThread,
  type RespondBody,
} from '@contracts/runs';
import { z } from 'zod';
import { api } from './http';

/**
 * What a person decides at a gate: go on, go on with the gated texts changed (node id → new text), send the phase
 * before the gate back to work with feedback, or stop. The reason is optional and kept with the decision.
 */
export type DecisionChoice =
  | { kind: 'approve'; reason?: string }
  | { kind: 'edit'; edits: Record<string, string>; reason?: string }
  | { kind: 'respond'; response: string; reason?: string }
  | { kind: 'reject'; reason?: string };

/** The endpoint and body of a decision; an empty reason is left out rather than recorded as one. */
export function decisionRequest(decision: DecisionChoice): {
  action: 'approve' | 'reject' | 'respond';
  body: ApproveBody | RespondBody;
} {
  const reason = decision.reason?.trim() ? { reason: decision.reason.trim() } : {};
  switch (decision.kind) {
    case 'approve':
      return { action: 'approve', body: reason };
    case 'edit':
      return { action: 'approve', body: { ...reason, edits: decision.edits } };
    case 'respond':
      return { action: 'respond', body: { ...reason, response: decision.response } };
    case 'reject':
      return { action: 'reject', body: reason };
  }
}

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
  /** A person's name for the thread; runs never change it. */
  rename: (threadId: string, name: string) =>
    api(`/threads/${threadId}`, { method: 'PATCH', body: { name } satisfies RenameThread, schema: ThreadSchema }),
  runs: (threadId: string) => api(`/threads/${threadId}/runs`, { schema: z.array(RunSchema) }),
  remove: (threadId: string) => api<void>(`/threads/${threadId}`, { method: 'DELETE' }),
  /** The thread's history: every checkpoint of its runs and branches, oldest first. */
  checkpoints: (threadId: string) => api(`/threads/${threadId}/checkpoints`, { schema: z.array(CheckpointSchema) }),
  /**
   * One person's decision at a pending gate. An edit is an approval with the changed texts; a respond sends the
   * phase before the gate back to work. The answer says where to follow the run from, or, when the gate needs more
   * approvals than this one, the approvals so far (the run keeps waiting and nothing is streamed).
   */
  decideGate: (threadId: string, gate: string, decision: DecisionChoice) => {
    const { action, body } = decisionRequest(decision);
    return api(`/threads/${threadId}/gates/${encodeURIComponent(gate)}/${action}`, {
      method: 'POST',
      body,
      schema: RunAcceptedSchema,
    });
  },
  /** Every decision taken at the thread's gates, oldest first: who, with which role, when, and what. */
  decisions: (threadId: string) => api(`/threads/${threadId}/decisions`, { schema: z.array(GateDecisionRecordSchema) }),
};
