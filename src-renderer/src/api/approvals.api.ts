import { ApprovalItemSchema } from '@contracts/runs';
import { z } from 'zod';
import { api } from './http';

export const approvalsApi = {
  /** The gates waiting for the caller to decide, across every project they may decide in, oldest first. */
  list: () => api('/approvals', { schema: z.array(ApprovalItemSchema) }),
};
