import { atLeast, type Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { type RunUsage, type UsageGroup, type UsageQuery, type UsageReport } from '../contracts/usage';
import type { ModelCallsRepository, UsageVisibility } from '../db/model-calls.repository';

/** The range a report covers when the request names no start. */
const DEFAULT_RANGE_MS = 30 * 24 * 3600_000;

/**
 * The usage accounting's reads (docs/observability.md#accounting). Who sees whose spend: instance administrators see
 * every call; on a project where the caller is owner or admin (held there or above), every call of it; on a project
 * where she holds a lower role, only the calls of the runs she started. A project or organisation she cannot see is
 * 404, as everywhere.
 */
export function usageService(deps: { access: Access; calls: ModelCallsRepository }) {
  const { access, calls } = deps;

  /**
   * Whether `principal` sees the spend of what `createdBy` started in the project (a run, an experiment): instance
   * admins, the project's owners and admins, and the person who started it.
   */
  async function seesSpend(principal: Principal, projectId: string, createdBy: string | null): Promise<boolean> {
    if (principal.instanceAdmin || principal.id === createdBy) return true;
    return atLeast(await access.scopeRole(principal, 'project', projectId), 'owner');
  }

  async function visibility(principal: Principal): Promise<UsageVisibility> {
    const roles = await access.projectRoles(principal);
    if (roles === null) return { all: true };
    const ownedProjects: string[] = [];
    const ownProjects: string[] = [];
    for (const [project, role] of roles) (atLeast(role, 'owner') ? ownedProjects : ownProjects).push(project);
    return { all: false, ownedProjects, ownProjects, userId: principal.id };
  }

  return {
    async report(principal: Principal, query: UsageQuery): Promise<UsageReport> {
      if (query.project_id) await access.requireProjectRole(principal, query.project_id, 'viewer');
      // A role anywhere inside the organisation is enough: a member of one of its projects sees her calls there.
      if (query.org_id) await access.requireOrgConfigRole(principal, query.org_id, 'viewer');
      const to = query.to ? new Date(query.to) : new Date();
      const from = query.from ? new Date(query.from) : new Date(to.getTime() - DEFAULT_RANGE_MS);
      // The schema let only known keys through; the rows are ordered by the keys in the order named.
      const groupBy = [...new Set(query.group_by?.split(',') ?? [])] as UsageGroup[];
      const { rows, truncated, total } = await calls.totals({
        from,
        to,
        groupBy,
        projectId: query.project_id,
        orgId: query.org_id,
        visibility: await visibility(principal),
      });
      return { from: from.toISOString(), to: to.toISOString(), group_by: groupBy, rows, truncated, total };
    },

    /**
     * A run's calls added up, for its detail: shown to those who may see its spend (the project's owners and admins,
     * and the person who started it), null to the others who may read the run.
     */
    async forRun(principal: Principal, run: { id: string; project_id: string }): Promise<RunUsage | null> {
      const found = await calls.runTotals(run.id);
      if (!found || !(await seesSpend(principal, run.project_id, found.createdBy))) return null;
      return { ...found.total, phases: found.phases };
    },

    seesSpend,
  };
}

export type UsageService = ReturnType<typeof usageService>;
