import { SecretListSchema, SecretSchema } from '@contracts/secrets';
import type { OwnedScope } from '@contracts/tenancy';
import { api } from './http';

/** Where a secret is kept: a project's or an organisation's. */
export type SecretScopeType = OwnedScope['type'];

const base = (scope: SecretScopeType, id: string) =>
  `/${scope === 'project' ? 'projects' : 'orgs'}/${encodeURIComponent(id)}/secrets`;

/**
 * Secrets of a project or an organisation, given to its runs' tool servers by name (docs/tools.md#secrets): their
 * names and when they were set are read back, their values never. Owners and admins of the scope only.
 */
export const secretsApi = {
  list: (scope: SecretScopeType, id: string) => api(base(scope, id), { schema: SecretListSchema }),
  set: (scope: SecretScopeType, id: string, name: string, value: string) =>
    api(`${base(scope, id)}/${encodeURIComponent(name)}`, { method: 'PUT', body: { value }, schema: SecretSchema }),
  remove: (scope: SecretScopeType, id: string, name: string) =>
    api<void>(`${base(scope, id)}/${encodeURIComponent(name)}`, { method: 'DELETE' }),
};
