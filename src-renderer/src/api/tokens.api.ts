import { CreatedPersonalTokenSchema, PersonalTokenSchema } from '@contracts/auth';
import { z } from 'zod';
import { api } from './http';

/** The signed-in person's own personal access tokens: listed without their secrets, each shown once when made. */
export const tokensApi = {
  list: () => api('/me/tokens', { schema: z.array(PersonalTokenSchema) }),
  create: (name: string) => api('/me/tokens', { method: 'POST', body: { name }, schema: CreatedPersonalTokenSchema }),
  revoke: (id: string) => api<void>(`/me/tokens/${encodeURIComponent(id)}/revoke`, { method: 'POST' }),
};
