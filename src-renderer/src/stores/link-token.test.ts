import type { Me } from '@contracts/auth';
import { describe, expect, it } from 'vitest';
import {
  decideLinkToken,
  describeIdentity,
  needsCheck,
  readLinkToken,
  sameIdentity,
  type Identity,
} from './link-token';

function me(id: string, name: string, kind: Me['user']['kind'], email: string | null = null, admin = false): Me {
  return { user: { id, name, email, kind }, instance_admin: admin, memberships: [], oidc_enabled: true };
}
const known = (m: Me): Identity => ({ state: 'known', me: m });
const ADMIN = me('00000000-0000-0000-0000-000000000001', 'api-token', 'api_token', null, true);
const ADA = me('7d9f3c2e-0000-4000-8000-000000000001', 'User ada', 'session', 'ada@example.com');
const MALLORY = me('7d9f3c2e-0000-4000-8000-000000000002', 'User mallory', 'session', 'mallory@example.com');
const REJECTED: Identity = { state: 'rejected' };
const UNKNOWN: Identity = { state: 'unknown', reason: 'Failed to fetch' };

describe('readLinkToken', () => {
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
});

describe('the decision on a studio link', () => {
  it('takes the link as it comes when nothing is stored, or the same token is', () => {
    expect(needsCheck(null, 'link')).toBe(false);
    expect(needsCheck('', 'link')).toBe(false);
    expect(needsCheck('link', 'link')).toBe(false);
    expect(needsCheck('stored', 'link')).toBe(true);
  });

  it('asks before switching to another identity', () => {
    expect(decideLinkToken(known(ADA), known(MALLORY))).toBe('ask');
    expect(decideLinkToken(known(ADMIN), known(MALLORY))).toBe('ask');
    expect(decideLinkToken(known(ADA), known(ADMIN))).toBe('ask');
  });

  it('switches silently to a refreshed token of the same identity', () => {
    expect(sameIdentity(ADA, { ...ADA, memberships: [] })).toBe(true);
    expect(decideLinkToken(known(ADA), known(ADA))).toBe('take');
    expect(decideLinkToken(known(ADMIN), known(ADMIN))).toBe('take');
  });

  it('replaces a stored token the server no longer accepts (no stored identity)', () => {
    expect(decideLinkToken(REJECTED, known(MALLORY))).toBe('take');
    expect(decideLinkToken(REJECTED, REJECTED)).toBe('take');
    expect(decideLinkToken(REJECTED, UNKNOWN)).toBe('take');
  });

  it('keeps the current identity when the link carries a token the server refuses', () => {
    expect(decideLinkToken(known(ADA), REJECTED)).toBe('keep');
    expect(decideLinkToken(UNKNOWN, REJECTED)).toBe('keep');
  });

  it('never switches silently when the server cannot say who is who', () => {
    expect(decideLinkToken(known(ADA), UNKNOWN)).toBe('ask');
    expect(decideLinkToken(UNKNOWN, known(ADA))).toBe('ask');
    expect(decideLinkToken(UNKNOWN, UNKNOWN)).toBe('ask');
  });

  it('tells the two identities apart by kind and id, not by name', () => {
    expect(sameIdentity(ADA, { ...MALLORY, user: { ...MALLORY.user, name: 'User ada' } })).toBe(false);
    expect(sameIdentity(ADMIN, { ...ADMIN, user: { ...ADMIN.user, kind: 'anonymous' } })).toBe(false);
  });
});

describe('describeIdentity', () => {
  it('names who a token signs in as', () => {
    expect(describeIdentity(known(ADA))).toBe('User ada (ada@example.com)');
    expect(describeIdentity(known(ADMIN))).toBe('api-token (API token, instance administrator)');
    expect(describeIdentity(REJECTED)).toBe('nobody (the token is not valid)');
    expect(describeIdentity(UNKNOWN)).toBe('unknown (the server could not say: Failed to fetch)');
  });
});
