import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { notFound } from '../contracts/errors';
import { DEFAULT_ORG_ID, type OrgFolder } from '../contracts/tenancy';
import {
  checkProjectPath,
  registrableFolder,
  type ProjectContextOptions,
  type TenantFolders,
} from '../context/project-context';
import type { OrgFoldersRepository } from '../db/org-folders.repository';
import { getLogger } from '../log';

const log = getLogger('svc.api');

export interface ProjectFoldersDeps {
  access: Access;
  folders: OrgFoldersRepository;
  /** The path rules (PROJECT_ROOTS, the clone cache) that every project path obeys. */
  pathOptions: ProjectContextOptions;
  /** Without authentication there is one user, and tenants' folders are not kept apart. */
  authEnabled: boolean;
}

/**
 * The folders of each organisation under PROJECT_ROOTS (docs/security.md#project-paths): who registers them, and
 * the one check of a project path, applied wherever a path is used (a new run, a thread's stored folder, a fork,
 * a schedule's fire, the LangGraph API) and again when the run reads or writes there.
 */
export function projectFoldersService(deps: ProjectFoldersDeps) {
  const { access, folders } = deps;

  /** Where the runs of a project's organisation may work; undefined when tenants' folders are not kept apart. */
  async function tenantFolders(projectId: string): Promise<TenantFolders | undefined> {
    if (!deps.authEnabled || deps.pathOptions.allowedRoots.length === 0) return undefined;
    const orgId = await access.orgIdOfProject(projectId);
    const all = await folders.all();
    return {
      own: orgId === DEFAULT_ORG_ID ? 'any' : all.filter((f) => f.org_id === orgId).map((f) => f.path),
      others: all.filter((f) => f.org_id !== orgId).map((f) => f.path),
    };
  }

  return {
    tenantFolders,

    /** Throws (400, with the reason) unless the caller may have a run of this project work in `projectPath`. */
    async checkPath(principal: Principal, projectPath: string, projectId: string): Promise<void> {
      await checkProjectPath(projectPath, deps.pathOptions, principal, await tenantFolders(projectId));
    },

    /** Anyone with a role in the organisation sees its folders: they are where its runs may work. */
    async list(principal: Principal, orgId: string): Promise<OrgFolder[]> {
      await access.requireOrgConfigRole(principal, orgId, 'viewer');
      return folders.list(orgId);
    },

    async register(principal: Principal, orgId: string, path: string): Promise<OrgFolder> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      const folder = await folders.register(orgId, principal.name, (existing) =>
        registrableFolder(
          path,
          deps.pathOptions,
          existing.map((f) => ({ path: f.path, sameOrg: f.org_id === orgId })),
        ),
      );
      log.info(`folder ${folder.path} registered to organisation ${orgId} by ${principal.name}`);
      return folder;
    },

    async remove(principal: Principal, orgId: string, folderId: string): Promise<void> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      if (!(await folders.remove(orgId, folderId))) throw notFound(`folder ${folderId} not found`);
      log.info(`folder ${folderId} of organisation ${orgId} removed by ${principal.name}`);
    },
  };
}

export type ProjectFoldersService = ReturnType<typeof projectFoldersService>;
