import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  PERSONAL_TOKEN_PREFIX,
  type CreatedPersonalToken,
  type CreatePersonalToken,
  type PersonalToken,
} from '../contracts/auth';
import { conflict, forbidden, notFound, unauthorized } from '../contracts/errors';
import type { PersonalTokensRepository } from '../db/personal-tokens.repository';
import { getLogger } from '../log';
import type { AuditLog } from './audit-log';
import type { Principal } from './principal';

const log = getLogger('svc.auth');

/** What the server keeps of a token, and looks it up by: its SHA-256, in hex. */
export const personalTokenDigest = (token: string) => createHash('sha256').update(token).digest('hex');

/** How many characters of a token its list shows: the prefix and six of the random part (36 of its 256 bits). */
const VISIBLE = PERSONAL_TOKEN_PREFIX.length + 6;

export const AUTH_OFF_MESSAGE =
  'authentication is off on this server (AUTH_ENABLED=false): every request is served without a token, so no ' +
  'personal access token is needed';

/**
 * A person's personal access tokens (docs/security.md#personal-access-tokens): lasting bearers for her scripts and
 * MCP clients, acting with her own roles. Each caller sees and revokes only her own: another person's token is
 * answered as one that does not exist. With authentication off there is nobody to be, and nothing to create.
 */
export function personalTokensService(deps: {
  tokens: PersonalTokensRepository;
  authEnabled: boolean;
  max: number;
  audit: AuditLog;
}) {
  const { tokens, authEnabled, max, audit } = deps;
  /** What the audit log keeps of a token: which one and what it is for, never the token (they do not expire). */
  const kept = (t: PersonalToken) => ({ id: t.id, name: t.name, created_at: t.created_at, expires_at: null });

  /** The user whose tokens the caller manages: herself (a signed-in user, or the API token's administrator). */
  function ownerOf(principal: Principal): string {
    if (!authEnabled || principal.kind === 'anonymous') throw conflict(AUTH_OFF_MESSAGE);
    // The routes are not public, so a visitor never gets here; should one, she has no tokens to manage.
    if (principal.kind === 'visitor') throw unauthorized();
    return principal.id;
  }

  return {
    list: (principal: Principal): Promise<PersonalToken[]> => tokens.listLive(ownerOf(principal)),

    /**
     * Makes a token and answers it, once. `viaPersonalToken`: the request itself came with a personal token, which
     * may not make another: revoking a leaked token then ends everything it could do.
     */
    async create(
      principal: Principal,
      body: CreatePersonalToken,
      viaPersonalToken: boolean,
    ): Promise<CreatedPersonalToken> {
      const userId = ownerOf(principal);
      if (viaPersonalToken) {
        throw forbidden('a personal access token cannot create another: sign in to the studio to make one');
      }
      const token = `${PERSONAL_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
      const made = await tokens.insertWithin(
        {
          id: randomUUID(),
          userId,
          name: body.name,
          sha256: personalTokenDigest(token),
          prefix: token.slice(0, VISIBLE),
        },
        max,
      );
      if (made === 'no_user') throw unauthorized('invalid or expired token');
      if (made === 'over_limit') {
        throw conflict(
          `you already have ${max} personal access tokens, the most one person may hold: revoke one to create another`,
        );
      }
      log.info(`personal access token ${made.id} created for user=${userId}`);
      await audit.record(principal, {
        action: 'token.created',
        target: `personal access token ${made.id}`,
        before: null,
        after: kept(made),
      });
      return { ...made, token };
    },

    async revoke(principal: Principal, id: string): Promise<void> {
      const userId = ownerOf(principal);
      const live = (await tokens.listLive(userId)).find((t) => t.id === id);
      if (!(await tokens.revoke(userId, id))) throw notFound(`personal access token ${id} not found`);
      log.info(`personal access token ${id} revoked by user=${userId}`);
      // Revoking one revoked before changes nothing: nothing to record.
      if (live) {
        await audit.record(principal, {
          action: 'token.revoked',
          target: `personal access token ${id}`,
          before: kept(live),
          after: null,
        });
      }
    },
  };
}

export type PersonalTokensService = ReturnType<typeof personalTokensService>;
