import { z } from 'zod';
import { UuidSchema } from './common';

/** Roles per scope, highest first. A role on a scope applies to everything inside it. */
export const ROLES = ['admin', 'owner', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export const RoleSchema = z.enum(ROLES);

export type ScopeType = 'org' | 'team' | 'project';

/** What an organisation or a project keeps for itself, set by its owners: budgets, secrets. */
export type OwnedScope = { type: 'org' | 'project'; id: string };

/** The default tenancy, the same in every installation so two processes never create two. */
export const DEFAULT_ORG_ID = '00000000-0000-4000-8000-000000000001';
export const DEFAULT_TEAM_ID = '00000000-0000-4000-8000-000000000002';
export const DEFAULT_PROJECT_ID = '00000000-0000-4000-8000-000000000003';

export const ScopeSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    /** The organisation of a team, the team of a project. */
    parent_id: z.uuid().nullable(),
    /** The caller's role here, inherited from above; null for instance administrators without a membership. */
    role: RoleSchema.nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'Scope' });
export type Scope = z.infer<typeof ScopeSchema>;

const ScopeName = z.string().trim().min(1).max(200);

/** POST /orgs. */
export const CreateOrgSchema = z.object({ name: ScopeName }).meta({ id: 'CreateOrg' });
/** POST /teams: a team belongs to an organisation. */
export const CreateTeamSchema = z
  .object({ name: ScopeName, parent_id: UuidSchema.meta({ description: 'the organisation of the team' }) })
  .meta({ id: 'CreateTeam' });
/** POST /projects: a project belongs to a team. */
export const CreateProjectSchema = z
  .object({ name: ScopeName, parent_id: UuidSchema.meta({ description: 'the team of the project' }) })
  .meta({ id: 'CreateProject' });

export const MemberSchema = z
  .object({ user_id: z.uuid(), name: z.string().nullable(), email: z.string().nullable(), role: RoleSchema })
  .meta({ id: 'Member' });
export type Member = z.infer<typeof MemberSchema>;

export const SetRoleSchema = z.object({ role: RoleSchema }).meta({ id: 'SetRole' });

/** A folder under PROJECT_ROOTS registered to an organisation: its projects' runs may work in it. */
export const OrgFolderSchema = z
  .object({
    id: z.uuid(),
    org_id: z.uuid(),
    /** The folder's real location (symlinks resolved) when it was registered. */
    path: z.string(),
    created_by: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'OrgFolder' });
export type OrgFolder = z.infer<typeof OrgFolderSchema>;

/** POST /orgs/{id}/folders. */
export const RegisterFolderSchema = z
  .object({
    path: z
      .string()
      .trim()
      .min(1)
      .max(2000)
      .refine((value) => value.startsWith('/'), 'must be an absolute path')
      .meta({ description: 'an absolute folder path under PROJECT_ROOTS' }),
  })
  .meta({ id: 'RegisterFolder' });
