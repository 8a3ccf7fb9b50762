import { ApprovalItemSchema, ToolGrantSchema } from '@contracts/runs';
import { z } from 'zod';
import { api } from './http';

export const approvalsApi = {
  /** The gates and tool calls waiting for the caller to decide, in every project they may decide in, oldest first. */
  list: () => api('/approvals', { schema: z.array(ApprovalItemSchema) }),
  /** The tools allowed for the rest of a thread by an approval, and the grants revoked since, oldest first. */
  toolGrants: (threadId: string) => api(`/threads/${threadId}/tool-grants`, { schema: z.array(ToolGrantSchema) }),
  /** The tool's next calls on the thread ask again. */
  revokeToolGrant: (threadId: string, grantId: string) =>
    api(`/threads/${threadId}/tool-grants/${grantId}/revoke`, { method: 'POST', schema: ToolGrantSchema }),
};
