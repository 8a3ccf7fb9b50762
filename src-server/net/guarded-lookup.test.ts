import type { lookup, LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { checkAddressLiteral, guardedLookup, InternalAddressError, type AddressRule } from './guarded-lookup';

const rule = (allowed: string[]): AddressRule => ({
  allowsInternal: (host) => allowed.includes(host),
  refusal: 'not reached',
});

const lookupOf = (host: string, allowed: string[], all: boolean) =>
  new Promise<{ error: Error | null; address: string | LookupAddress[] }>((resolve) =>
    guardedLookup(rule(allowed))(host, { all }, (error, address) => resolve({ error, address })),
  );

describe('the guarded lookup', () => {
  it('refuses a name that resolves to the server itself, unless the rule allows that host', async () => {
    const refused = await lookupOf('localhost', [], false);
    expect(refused.error).toBeInstanceOf(InternalAddressError);
    expect(refused.error?.message).toBe(
      "localhost resolves to an address on the server's own network (loopback, link-local or private): not reached",
    );
    const allowed = await lookupOf('localhost', ['localhost'], false);
    expect(allowed.error).toBeNull();
    expect(['127.0.0.1', '::1']).toContain(allowed.address);
    const all = await lookupOf('localhost', ['localhost'], true);
    expect(Array.isArray(all.address) && all.address.length).toBeGreaterThan(0);
  });

  it('hands on exactly the addresses it checked', async () => {
    const answer: LookupAddress[] = [{ address: '93.184.216.34', family: 4 }];
    const resolve = ((_host: string, _options: object, callback: (e: null, a: LookupAddress[]) => void) =>
      callback(null, answer)) as unknown as typeof lookup;
    const got = await new Promise<unknown>((done) =>
      guardedLookup(rule([]), resolve)('example.test', { all: true }, (_error, address) => done(address)),
    );
    expect(got).toEqual(answer);
  });

  it('refuses an internal address literal, which Node connects to without a lookup, unless allowed', () => {
    expect(() => checkAddressLiteral(new URL('http://[::ffff:169.254.169.254]/'), rule([]))).toThrow(
      InternalAddressError,
    );
    expect(() => checkAddressLiteral(new URL('http://127.0.0.1:9/'), rule(['127.0.0.1']))).not.toThrow();
    expect(() => checkAddressLiteral(new URL('https://93.184.216.34/'), rule([]))).not.toThrow();
  });
});
