import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import { OrgFolderSchema, RegisterFolderSchema } from '../contracts/tenancy';
import type { ProjectFoldersService } from '../services/project-folders.service';
import type { Api } from './api';

/** /orgs/{id}/folders: the folders under PROJECT_ROOTS where an organisation's runs may work. */
export function foldersRoutes(api: Api, folders: ProjectFoldersService): void {
  const tag = 'tenancy';
  api.route({
    method: 'get',
    path: '/orgs/{id}/folders',
    operationId: 'listOrgFolders',
    tag,
    summary: "The organisation's folders: where its projects' runs may work (anyone with a role in it)",
    params: z.object({ id: UuidSchema }),
    responses: { 200: { description: 'the folders', schema: z.array(OrgFolderSchema) } },
    handler: ({ params, ctx }) => folders.list(ctx.principal, params.id),
  });
  api.route({
    method: 'post',
    path: '/orgs/{id}/folders',
    operationId: 'registerOrgFolder',
    tag,
    summary: 'Register a folder under PROJECT_ROOTS to the organisation (its admins, or the instance administrator)',
    params: z.object({ id: UuidSchema }),
    body: RegisterFolderSchema,
    errors: {
      400: 'not an existing folder under PROJECT_ROOTS, or inside the clone cache (bad_request)',
      403: 'needs the admin role on the organisation (forbidden)',
      409: 'PROJECT_ROOTS is not set, or the folder overlaps a registered one (conflict)',
    },
    responses: { 201: { description: 'registered', schema: OrgFolderSchema } },
    handler: ({ params, body, ctx }) => folders.register(ctx.principal, params.id, body.path),
  });
  api.route({
    method: 'delete',
    path: '/orgs/{id}/folders/{folder_id}',
    operationId: 'removeOrgFolder',
    tag,
    summary: "Remove a folder: the organisation's runs may no longer start there",
    params: z.object({ id: UuidSchema, folder_id: UuidSchema }),
    errors: { 403: 'needs the admin role on the organisation (forbidden)' },
    responses: { 204: { description: 'removed' } },
    handler: async ({ params, ctx }) => {
      await folders.remove(ctx.principal, params.id, params.folder_id);
    },
  });
}
