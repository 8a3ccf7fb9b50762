import type { Me } from '@contracts/auth';
import { describe, expect, it } from 'vitest';
import {
  decideLinkToken,
  describeIdentity,
  readHandoff,
  readLinkToken,
  signsSomeoneIn,
  type Identity,
} from './link-token';

function me(id: string, name: string, kind: Me['user']['kind'], email: string | null = null, admin = false): Me {
  return { user: { id, name, email, kind }, instance_admin: admin, memberships: [], oidc_enabled: true };
}
const known = (m: Me): Identity => ({ state: 'known', me: m });
const ADMIN = me('00000000-0000-0000-0000-000000000001', 'api-token', 'api_token', null, true);
const ADA = me('7d9f3c2e-0000-4000-8000-000000000001', 'User ada', 'session', 'ada@example.com');
const NONE: Identity = { state: 'none' };
const REJECTED: Identity = { state: 'rejected' };
const UNKNOWN: Identity = { state: 'unknown', reason: 'Failed to fetch' };

describe('reading a studio link', () => {
  it('finds the token in the fragment, decoded', () => {
    expect(readLinkToken('#token=abc.def-ghi')).toBe('abc.def-ghi');
    expect(readLinkToken('#x=1&token=a%2Bb')).toBe('a+b');
    expect(readLinkToken('#token=%E0%A4%A')).toBe('%E0%A4%A');
  });
  it('finds nothing without one', () => {
    expect(readLinkToken('')).toBeNull();
    expect(readLinkToken('#section')).toBeNull();
    expect(readLinkToken('#mytoken=abc')).toBeNull();
    expect(readLinkToken('#token=')).toBeNull();
  });
  it("finds the sign-in's handoff beside the token", () => {
    expect(readHandoff('#token=abc&handoff=xyz_-1')).toBe('xyz_-1');
    expect(readLinkToken('#token=abc&handoff=xyz_-1')).toBe('abc');
    expect(readHandoff('#token=abc')).toBeNull();
    expect(readHandoff('#token=abc&myhandoff=xyz')).toBeNull();
  });
});

describe('the decision on a studio link', () => {
  it("takes the token of this tab's own sign-in, and of the desktop window's own launch, without asking", () => {
    for (const next of [known(ADA), known(ADMIN), UNKNOWN]) {
      expect(decideLinkToken('own-sign-in', next)).toBe('take');
      expect(decideLinkToken('desktop-launch', next)).toBe('take');
    }
  });

  it('asks about any other link, whoever its token signs in as', () => {
    expect(decideLinkToken('other', known(ADA))).toBe('ask');
    expect(decideLinkToken('other', known(ADMIN))).toBe('ask');
    expect(decideLinkToken('other', UNKNOWN)).toBe('ask');
  });

  it('keeps things as they are when the server refuses the link of another source', () => {
    expect(decideLinkToken('other', REJECTED)).toBe('keep');
  });

  it('calls it a switch only when a stored token signs someone in (or might)', () => {
    expect(signsSomeoneIn(known(ADA))).toBe(true);
    expect(signsSomeoneIn(UNKNOWN)).toBe(true);
    expect(signsSomeoneIn(NONE)).toBe(false);
    expect(signsSomeoneIn(REJECTED)).toBe(false);
  });
});

describe('describeIdentity', () => {
  it('names who a token signs in as', () => {
    expect(describeIdentity(known(ADA))).toBe('User ada (ada@example.com)');
    expect(describeIdentity(known(ADMIN))).toBe('the API token (instance administrator)');
    expect(describeIdentity(NONE)).toBe('nobody');
    expect(describeIdentity(REJECTED)).toBe('nobody (the stored sign-in is no longer valid)');
    expect(describeIdentity(UNKNOWN)).toBe('unknown (the server could not say: Failed to fetch)');
  });
});
