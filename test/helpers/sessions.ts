import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { SESSION_ISSUER } from '../../src-server/auth/authenticator';
import type { Pool } from '../../src-server/db/pool';

export type ScopeLevel = 'org' | 'team' | 'project';

/** A role for a user on an organisation, team or project, straight into svc_memberships. */
export const grantRole = (pool: Pool, userId: string, level: ScopeLevel, scopeId: string, role: string) =>
  pool.query(`INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, $2, $3, $4)`, [
    userId,
    level,
    scopeId,
    role,
  ]);

/** A signed-in user as an OIDC login would create one, with the roles given; returns its id. */
export async function addUser(
  pool: Pool,
  name: string,
  roles: [level: ScopeLevel, scopeId: string, role: string][] = [],
): Promise<string> {
  const id = randomUUID();
  await pool.query(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'test', $2, $3)`, [id, id, name]);
  for (const [level, scopeId, role] of roles) await grantRole(pool, id, level, scopeId, role);
  return id;
}

/** A session token for `sub`, as the server issues one after a login (HS256 with the session secret). */
export const signSession = (sub: string, secret: string, expiresIn: string | number = '1h', name = sub.slice(0, 8)) =>
  new SignJWT({ name })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuer(SESSION_ISSUER)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(secret));

/**
 * The three people the access tests use, each with a session token: Ann, a member of the default project; Vera, a
 * viewer there; Mallory, a member of a project of another organisation, and of nothing here.
 */
export async function threePeople(
  pool: Pool,
  secret: string,
  defaultProject: string,
): Promise<{ ann: string; vera: string; mallory: string }> {
  const annId = await addUser(pool, 'Ann', [['project', defaultProject, 'member']]);
  const veraId = await addUser(pool, 'Vera', [['project', defaultProject, 'viewer']]);
  const [org, team, project] = [randomUUID(), randomUUID(), randomUUID()];
  await pool.query(`INSERT INTO svc_orgs (id, name) VALUES ($1, 'Other org')`, [org]);
  await pool.query(`INSERT INTO svc_teams (id, org_id, name) VALUES ($1, $2, 'Other team')`, [team, org]);
  await pool.query(`INSERT INTO svc_projects (id, team_id, name) VALUES ($1, $2, 'Other project')`, [project, team]);
  const malloryId = await addUser(pool, 'Mallory', [['project', project, 'member']]);
  const [ann, vera, mallory] = await Promise.all([
    signSession(annId, secret, '1h', 'Ann'),
    signSession(veraId, secret, '1h', 'Vera'),
    signSession(malloryId, secret, '1h', 'Mallory'),
  ]);
  return { ann, vera, mallory };
}
