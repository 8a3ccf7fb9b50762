import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import type { ScopeType } from '../contracts/tenancy';
import type { TenancyService } from '../auth/tenancy.service';
import {
  CreateOrgSchema,
  CreateProjectSchema,
  CreateTeamSchema,
  MemberSchema,
  ScopeSchema,
  SetRoleSchema,
} from '../contracts/tenancy';
import type { Api } from './api';

/** What creating one takes: a name, and the parent's id for a team or a project. */
type CreateBody = z.ZodType<{ name: string; parent_id?: string }>;
const RESOURCES: {
  type: ScopeType;
  path: string;
  parentQuery: string | null;
  one: string;
  many: string;
  create: CreateBody;
}[] = [
  { type: 'org', path: '/orgs', parentQuery: null, one: 'Org', many: 'Orgs', create: CreateOrgSchema },
  { type: 'team', path: '/teams', parentQuery: 'org_id', one: 'Team', many: 'Teams', create: CreateTeamSchema },
  {
    type: 'project',
    path: '/projects',
    parentQuery: 'team_id',
    one: 'Project',
    many: 'Projects',
    create: CreateProjectSchema,
  },
];

/** GET/POST/DELETE on /orgs, /teams, /projects, and their `/{id}/members` sub-resources. */
export function tenancyRoutes(api: Api, tenancy: TenancyService): void {
  for (const { type, path, parentQuery, one, many, create } of RESOURCES) {
    const tag = 'tenancy';
    api.route({
      method: 'get',
      path,
      operationId: `list${many}`,
      tag,
      summary: `${path.slice(1)} the caller may see${parentQuery ? `, optionally within ?${parentQuery}=` : ''}`,
      query: parentQuery ? z.object({ [parentQuery]: UuidSchema.optional() }) : undefined,
      responses: { 200: { description: 'visible scopes', schema: z.array(ScopeSchema) } },
      handler: ({ query, ctx }) =>
        tenancy.list(
          ctx.principal,
          type,
          parentQuery ? (query as Record<string, string | undefined>)[parentQuery] : undefined,
        ),
    });
    api.route({
      method: 'post',
      path,
      operationId: `create${one}`,
      tag,
      summary: parentQuery
        ? `Create (parent_id: the ${parentQuery.replace('_id', '')})`
        : 'Create an organisation (instance administrators)',
      body: create,
      errors: parentQuery
        ? {
            403: `needs the admin role on the ${parentQuery.replace('_id', '')} (forbidden)`,
            404: `the ${parentQuery.replace('_id', '')} named by parent_id is not visible to the caller`,
          }
        : { 403: 'only instance administrators create organisations (forbidden)' },
      responses: { 201: { description: 'created', schema: ScopeSchema } },
      handler: ({ body, ctx }) => tenancy.create(ctx.principal, type, body.name, body.parent_id),
    });
    api.route({
      method: 'delete',
      path: `${path}/{id}`,
      operationId: `delete${one}`,
      tag,
      summary: 'Delete, with everything inside it (the defaults cannot be deleted)',
      params: z.object({ id: UuidSchema }),
      errors: {
        403: `needs the admin role on the ${type === 'org' ? 'organisation' : `${type}'s parent`} (forbidden)`,
        409: `the default ${type === 'org' ? 'organisation' : type} cannot be deleted (conflict)`,
      },
      responses: { 204: { description: 'deleted' } },
      handler: async ({ params, ctx }) => {
        await tenancy.remove(ctx.principal, type, params.id);
      },
    });
    api.route({
      method: 'get',
      path: `${path}/{id}/members`,
      operationId: `list${one}Members`,
      tag,
      summary: 'Members and their roles',
      params: z.object({ id: UuidSchema }),
      responses: { 200: { description: 'members', schema: z.array(MemberSchema) } },
      handler: ({ params, ctx }) => tenancy.members(ctx.principal, type, params.id),
    });
    api.route({
      method: 'put',
      path: `${path}/{id}/members/{user_id}`,
      operationId: `set${one}Member`,
      tag,
      summary: "Add a member or change a member's role",
      params: z.object({ id: UuidSchema, user_id: UuidSchema }),
      body: SetRoleSchema,
      errors: { 403: 'managing members needs a higher role, or the role given is above your own (forbidden)' },
      responses: { 200: { description: 'members after the change', schema: z.array(MemberSchema) } },
      handler: ({ params, body, ctx }) => tenancy.setRole(ctx.principal, type, params.id, params.user_id, body.role),
    });
    api.route({
      method: 'delete',
      path: `${path}/{id}/members/{user_id}`,
      operationId: `remove${one}Member`,
      tag,
      summary: 'Remove a member',
      params: z.object({ id: UuidSchema, user_id: UuidSchema }),
      errors: { 403: 'managing members needs a higher role (forbidden)' },
      responses: { 204: { description: 'removed' } },
      handler: async ({ params, ctx }) => {
        await tenancy.removeMember(ctx.principal, type, params.id, params.user_id);
      },
    });
  }
}
