import { ScopeSchema } from '@contracts/tenancy';
import { z } from 'zod';
import { api } from './http';

/** Organisations, teams and projects the caller may see; each carries its parent's id. */
export const tenancyApi = {
  orgs: () => api('/orgs', { schema: z.array(ScopeSchema) }),
  teams: () => api('/teams', { schema: z.array(ScopeSchema) }),
  projects: () => api('/projects', { schema: z.array(ScopeSchema) }),
};
