import type { Scope } from '@contracts/tenancy';
import { api } from './http';

/** Organisations, teams and projects the caller may see; each carries its parent's id. */
export const tenancyApi = {
  orgs: () => api<Scope[]>('/orgs'),
  teams: () => api<Scope[]>('/teams'),
  projects: () => api<Scope[]>('/projects'),
};
