import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { ProjectRetention, RetentionSettings } from '../contracts/retention';
import type { RetentionRepository } from '../db/retention.repository';
import { getLogger } from '../log';
import type { AuditLog } from '../auth/audit-log';

const log = getLogger('svc.api');

/** A project's retention settings: its members read them, its owners change them (docs/retention.md). */
export function retentionService(deps: { access: Access; retention: RetentionRepository; audit: AuditLog }) {
  const { access, retention, audit } = deps;
  const kept = (r: ProjectRetention) => ({
    keep_finished_threads_days: r.keep_finished_threads_days,
    prune_checkpoints: r.prune_checkpoints,
  });
  return {
    async get(principal: Principal, projectId: string): Promise<ProjectRetention> {
      await access.requireProjectRole(principal, projectId, 'viewer', `project ${projectId}`);
      return retention.settings(projectId);
    },

    async save(principal: Principal, projectId: string, settings: RetentionSettings): Promise<ProjectRetention> {
      await access.requireProjectRole(principal, projectId, 'owner', `project ${projectId}`);
      const before = await retention.settings(projectId);
      await retention.saveSettings(projectId, settings, principal.name);
      const days = settings.keep_finished_threads_days;
      log.info(
        `project ${projectId} retention: finished threads kept ${days === null ? 'forever' : `${days} day(s)`}, ` +
          `checkpoints ${settings.prune_checkpoints ? 'pruned' : 'kept'} (by ${principal.name})`,
      );
      const after = await retention.settings(projectId);
      await audit.record(principal, {
        action: 'retention.set',
        projectId,
        target: `retention of project ${projectId}`,
        // Never saved before: the defaults applied, which is what it was.
        before: kept(before),
        after: kept(after),
      });
      return after;
    },
  };
}

export type RetentionService = ReturnType<typeof retentionService>;
