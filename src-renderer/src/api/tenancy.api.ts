import { ProjectRetentionSchema, type RetentionSettings } from '@contracts/retention';
import { ScopeSchema } from '@contracts/tenancy';
import { z } from 'zod';
import { api } from './http';

/** Organisations, teams and projects the caller may see; each carries its parent's id. */
export const tenancyApi = {
  orgs: () => api('/orgs', { schema: z.array(ScopeSchema) }),
  teams: () => api('/teams', { schema: z.array(ScopeSchema) }),
  projects: () => api('/projects', { schema: z.array(ScopeSchema) }),
  /** A project in a team (the caller needs the admin role on it). */
  createProject: (teamId: string, name: string) =>
    api('/projects', { method: 'POST', body: { name, parent_id: teamId }, schema: ScopeSchema }),
  /** How long a project keeps its finished threads, and whether it prunes their checkpoints (docs/retention.md). */
  retention: (projectId: string) =>
    api(`/projects/${encodeURIComponent(projectId)}/retention`, { schema: ProjectRetentionSchema }),
  setRetention: (projectId: string, settings: RetentionSettings) =>
    api(`/projects/${encodeURIComponent(projectId)}/retention`, {
      method: 'PUT',
      body: settings,
      schema: ProjectRetentionSchema,
    }),
};
