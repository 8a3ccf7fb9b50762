import type { Me } from '@contracts/auth';

/**
 * A studio link carries a token in its fragment (`/ui#token=…`): the start-up link, the end of an OIDC
 * sign-in, or a link someone sent. Taken blindly, a link from someone else would sign the studio into their
 * account, and what the user types next would land in their threads. These rules decide, from who each
 * token signs in as, whether the link's token replaces the stored one.
 */

/** Who a token signs in as, by the server's `/auth/me` answer for it. */
export type Identity =
  | { state: 'known'; me: Me }
  /** The server refused the token (401): it signs no one in, e.g. a per-launch token from an earlier start. */
  | { state: 'rejected' }
  /** The server could not say (unreachable, or an error other than 401). */
  | { state: 'unknown'; reason: string };

/** take: store the link's token; keep: stay as is; ask: the user chooses, seeing both identities. */
export type LinkDecision = 'take' | 'keep' | 'ask';

/** The token in a location fragment such as `#token=abc` or `#x=1&token=abc`, or null. */
export function readLinkToken(hash: string): string | null {
  const match = /(?:^#|&)token=([^&]+)/.exec(hash);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]!) || null;
  } catch {
    return match[1]!;
  }
}

/** Whether the stored token needs looking at at all: no stored token, or the same one, is taken as it comes. */
export function needsCheck(stored: string | null, link: string): boolean {
  return stored !== null && stored !== '' && stored !== link;
}

export function sameIdentity(a: Me, b: Me): boolean {
  return a.user.kind === b.user.kind && a.user.id === b.user.id;
}

/**
 * `current` is who the stored token signs in as, `next` who the link's token does. A stored token that
 * signs no one in any more is replaced, and so is one of the same identity (a refreshed token); a link whose
 * token the server refuses changes nothing; any other case, including one the server cannot answer, is the
 * user's choice, never a silent switch.
 */
export function decideLinkToken(current: Identity, next: Identity): LinkDecision {
  if (current.state === 'rejected') return 'take';
  if (next.state === 'rejected') return 'keep';
  if (current.state === 'known' && next.state === 'known' && sameIdentity(current.me, next.me)) return 'take';
  return 'ask';
}

const KIND_LABELS: Record<Me['user']['kind'], string> = {
  api_token: 'API token',
  session: 'signed-in user',
  anonymous: 'no sign-in',
  visitor: 'visitor',
};

/** How the confirmation names an identity: name, then email or what kind of caller it is. */
export function describeIdentity(identity: Identity): string {
  if (identity.state === 'rejected') return 'nobody (the token is not valid)';
  if (identity.state === 'unknown') return `unknown (the server could not say: ${identity.reason})`;
  const { user } = identity.me;
  const details = [
    user.email ?? KIND_LABELS[user.kind],
    ...(identity.me.instance_admin ? ['instance administrator'] : []),
  ];
  return `${user.name} (${details.join(', ')})`;
}
