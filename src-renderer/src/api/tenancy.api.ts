import { ProjectRetentionSchema, type RetentionSettings } from '@contracts/retention';
import { OrgFolderSchema, ScopeSchema } from '@contracts/tenancy';
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
  /** The folders under the server's PROJECT_ROOTS where an organisation's runs may work (docs/security.md). */
  folders: (orgId: string) => api(`/orgs/${encodeURIComponent(orgId)}/folders`, { schema: z.array(OrgFolderSchema) }),
  registerFolder: (orgId: string, path: string) =>
    api(`/orgs/${encodeURIComponent(orgId)}/folders`, { method: 'POST', body: { path }, schema: OrgFolderSchema }),
  removeFolder: (orgId: string, folderId: string) =>
    api<void>(`/orgs/${encodeURIComponent(orgId)}/folders/${encodeURIComponent(folderId)}`, { method: 'DELETE' }),
  setRetention: (projectId: string, settings: RetentionSettings) =>
    api(`/projects/${encodeURIComponent(projectId)}/retention`, {
      method: 'PUT',
      body: settings,
      schema: ProjectRetentionSchema,
    }),
};
