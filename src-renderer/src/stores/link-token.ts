import type { Me } from '@contracts/auth';
import { personName } from './person-name';

/**
 * A studio link carries a token in its fragment (`/ui#token=…`): the start-up link, the end of an OIDC sign-in, or
 * a link someone sent. Taken blindly, a link from someone else would sign the studio into their account, a fresh
 * browser with no token stored as much as one signed in as another person, and what the user types next would land
 * in their threads. So a link's token is taken at once only when the studio knows where it comes from: the end of
 * the sign-in this tab started, or the desktop app's window opened on its own per-launch token. Any other is taken
 * only after the person has seen who it signs in as and agreed.
 */

/** Who a token signs in as, by the server's `/auth/me` answer for it. */
export type Identity =
  | { state: 'known'; me: Me }
  /** No token is stored: the studio signs no one in. */
  | { state: 'none' }
  /** The server refused the token (401): it signs no one in, e.g. a per-launch token from an earlier start. */
  | { state: 'rejected' }
  /** The server could not say (unreachable, or an error other than 401). */
  | { state: 'unknown'; reason: string };

/**
 * own-sign-in: the fragment hands back the value this tab sent to `/auth/login` (see sign-in-handoff.ts);
 * desktop-launch: the desktop app's window, and the token is the one its main process started the server with;
 * other: anything else, a link typed, pasted, followed from a mail or opened by another page.
 */
export type LinkSource = 'own-sign-in' | 'desktop-launch' | 'other';

/** A value of a location fragment such as `#token=abc` or `#token=abc&handoff=xyz`, decoded, or null. */
export function readFragmentValue(hash: string, name: string): string | null {
  const match = new RegExp(`(?:^#|&)${name}=([^&]+)`).exec(hash);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]!) || null;
  } catch {
    return match[1]!;
  }
}

export const readLinkToken = (hash: string) => readFragmentValue(hash, 'token');
export const readHandoff = (hash: string) => readFragmentValue(hash, 'handoff');

/** take: store the link's token; keep: stay as is (the person is told why); ask: the person chooses. */
export type LinkDecision = 'take' | 'keep' | 'ask';

/**
 * `next` is who the link's token signs in as. A source the studio set going itself is taken; otherwise a token the
 * server refuses changes nothing, and any other, whatever is stored (nothing, a token that no longer works, another
 * one, even one of the same person), is the person's choice.
 */
export function decideLinkToken(source: LinkSource, next: Identity): LinkDecision {
  if (source !== 'other') return 'take';
  return next.state === 'rejected' ? 'keep' : 'ask';
}

/** Whether someone is signed in by this identity, so that the link would switch rather than sign in. */
export const signsSomeoneIn = (identity: Identity) => identity.state === 'known' || identity.state === 'unknown';

const KIND_LABELS: Record<Me['user']['kind'], string> = {
  api_token: 'API token',
  session: 'signed-in user',
  anonymous: 'no sign-in',
  visitor: 'visitor',
};

/** How the confirmation names an identity: name, then email or what kind of caller it is. */
export function describeIdentity(identity: Identity): string {
  if (identity.state === 'none') return 'nobody';
  if (identity.state === 'rejected') return 'nobody (the stored sign-in is no longer valid)';
  if (identity.state === 'unknown') return `unknown (the server could not say: ${identity.reason})`;
  const { user } = identity.me;
  const name = personName(user.name);
  const details = [
    // "the API token" says what it is already.
    ...(name !== user.name ? [] : [user.email ?? KIND_LABELS[user.kind]]),
    ...(identity.me.instance_admin ? ['instance administrator'] : []),
  ];
  return details.length ? `${name} (${details.join(', ')})` : name;
}
