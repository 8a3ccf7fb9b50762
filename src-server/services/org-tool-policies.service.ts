import { checkedBody } from '../assets/asset-error';
import { floorPoliciesOf, type PolicyOptions } from '../assets/tool-declarations';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { OrgToolPolicies } from '../contracts/tools';
import type { OrgToolPoliciesRepository } from '../db/org-tool-policies.repository';
import { getLogger } from '../log';

const log = getLogger('svc.api');

/**
 * An organisation's floor of tool policies (docs/tools.md#an-organisations-floor): anyone with a role inside the
 * organisation reads it, its admins set it; runs apply it through the toolbox.
 */
export function orgToolPoliciesService(deps: { access: Access; floors: OrgToolPoliciesRepository }) {
  const { access, floors } = deps;
  return {
    async get(principal: Principal, orgId: string): Promise<OrgToolPolicies> {
      await access.requireOrgConfigRole(principal, orgId, 'viewer');
      return floors.get(orgId);
    },

    /** Replaces the floor, written as an agent's `tools.policies` and checked alike (400 naming the field). */
    async save(principal: Principal, orgId: string, given: Record<string, PolicyOptions>): Promise<OrgToolPolicies> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      const policies = checkedBody((source) => floorPoliciesOf(source, ['policies'], given));
      await floors.save(orgId, policies, principal.id);
      log.info(`organisation ${orgId} tool policies set to ${policies.length} pattern(s) by ${principal.name}`);
      return floors.get(orgId);
    },
  };
}

export type OrgToolPoliciesService = ReturnType<typeof orgToolPoliciesService>;
