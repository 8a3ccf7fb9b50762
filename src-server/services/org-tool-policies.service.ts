import { checkedBody } from '../assets/asset-error';
import { floorPoliciesOf, type PolicyOptions } from '../assets/tool-declarations';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { OrgToolPolicies, ToolPolicy } from '../contracts/tools';
import type { OrgToolPoliciesRepository } from '../db/org-tool-policies.repository';
import { getLogger } from '../log';
import type { AuditLog } from '../auth/audit-log';

const log = getLogger('svc.api');

/**
 * An organisation's floor of tool policies (docs/tools.md#an-organisations-floor): anyone with a role inside the
 * organisation reads it, its admins set it; runs apply it through the toolbox.
 */
export function orgToolPoliciesService(deps: { access: Access; floors: OrgToolPoliciesRepository; audit: AuditLog }) {
  const { access, floors, audit } = deps;
  return {
    async get(principal: Principal, orgId: string): Promise<OrgToolPolicies> {
      await access.requireOrgConfigRole(principal, orgId, 'viewer');
      return floors.get(orgId);
    },

    /** Replaces the floor, written as an agent's `tools.policies` and checked alike (400 naming the field). */
    async save(principal: Principal, orgId: string, given: Record<string, PolicyOptions>): Promise<OrgToolPolicies> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      const policies = checkedBody((source) => floorPoliciesOf(source, ['policies'], given));
      const before = (await floors.get(orgId)).policies;
      await floors.save(orgId, policies, principal.id);
      log.info(`organisation ${orgId} tool policies set to ${policies.length} pattern(s) by ${principal.name}`);
      const saved = await floors.get(orgId);
      // One entry per pattern that changed: set (added or changed) or removed.
      const byTool = (list: readonly ToolPolicy[]) => new Map(list.map((p) => [p.tool, p]));
      const [was, now] = [byTool(before), byTool(saved.policies)];
      for (const tool of new Set([...was.keys(), ...now.keys()])) {
        const [old, next] = [was.get(tool) ?? null, now.get(tool) ?? null];
        if (JSON.stringify(old) === JSON.stringify(next)) continue;
        await audit.record(principal, {
          action: next ? 'tool_policy.set' : 'tool_policy.removed',
          orgId,
          target: `tool policy ${tool}`,
          before: old,
          after: next,
        });
      }
      return saved;
    },
  };
}

export type OrgToolPoliciesService = ReturnType<typeof orgToolPoliciesService>;
