import type { Principal } from './principal';

/** Roles per scope, highest first. A role on a scope applies to everything inside it. */
export const ROLES = ['admin', 'owner', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Access rules in one place: every service asks this before it reads or changes tenant data.
 * With authentication disabled every check passes (the caller is the anonymous admin).
 */
export interface Access {
  /** The project runs and threads go to when none is given. Exists from the first start. */
  defaultProjectId(): Promise<string>;
  /** Projects whose threads and runs the caller may read; `null` means every project. */
  visibleProjectIds(principal: Principal): Promise<string[] | null>;
  /**
   * Throws unless the caller holds at least `role` on the project (directly or through its team or
   * organisation). A caller who cannot even read the project gets 404, never 403, so nothing leaks.
   */
  requireProjectRole(principal: Principal, projectId: string, role: Role): Promise<void>;
  /** The organisation a project belongs to: phase configuration is kept per organisation. */
  orgIdOfProject(projectId: string): Promise<string>;
  requireOrgRole(principal: Principal, orgId: string, role: Role): Promise<void>;
}
