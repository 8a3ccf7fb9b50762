import { z } from 'zod';
import { PolicyNotationSchema } from '../assets/tool-declarations';
import { UuidSchema } from '../contracts/common';
import { OrgToolPoliciesSchema } from '../contracts/tools';
import type { OrgToolPoliciesService } from '../services/org-tool-policies.service';
import type { Api } from './api';

/** PUT /orgs/{id}/tool-policies: pattern → policy, as an agent's `tools.policies` writes them. */
const OrgToolPoliciesBodySchema = z
  .object({
    policies: z.record(z.string(), PolicyNotationSchema).meta({
      description:
        '`<server>.<tool>` or `<server>.*` → `allow`, `ask`, `deny`, or `{policy: ask, decide_role, approvals, ' +
        'expires_after, on_expiry}`; replaces the floor as a whole ({} removes it)',
    }),
  })
  .meta({
    id: 'OrgToolPoliciesBody',
    examples: [{ policies: { 'project.write_file': { policy: 'ask', decide_role: 'owner' }, 'tracker.*': 'deny' } }],
  });

/** /orgs/{id}/tool-policies: the organisation's floor of tool policies, which no agent of it loosens. */
export function orgToolPoliciesRoutes(api: Api, floors: OrgToolPoliciesService): void {
  const tag = 'tenancy';
  api.route({
    method: 'get',
    path: '/orgs/{id}/tool-policies',
    operationId: 'getOrgToolPolicies',
    tag,
    summary: "The organisation's tool policies: a floor its agents cannot loosen (anyone with a role in it)",
    params: z.object({ id: UuidSchema }),
    responses: { 200: { description: 'the policies, as runs apply them', schema: OrgToolPoliciesSchema } },
    handler: ({ params, ctx }) => floors.get(ctx.principal, params.id),
  });
  api.route({
    method: 'put',
    path: '/orgs/{id}/tool-policies',
    operationId: 'setOrgToolPolicies',
    tag,
    summary: "Set the organisation's tool policies (its admins, or the instance administrator)",
    description:
      "The stricter of the organisation's policy and the agent's applies to each call: deny over ask over allow; of " +
      'two that ask, the higher decide_role, the more approvals and the stricter expiry (docs/tools.md).',
    params: z.object({ id: UuidSchema }),
    body: OrgToolPoliciesBodySchema,
    errors: {
      400: 'a pattern that is not `<server>.<tool>` or `<server>.*`, a project tool that does not exist, or gate options that do not fit (invalid_request, details.fields names the field)',
      403: 'needs the admin role on the organisation (forbidden)',
    },
    responses: { 200: { description: 'the policies as saved', schema: OrgToolPoliciesSchema } },
    handler: ({ params, body, ctx }) => floors.save(ctx.principal, params.id, body.policies),
  });
}
