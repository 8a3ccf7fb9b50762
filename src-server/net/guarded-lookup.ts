import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { isInternalAddress } from './internal-address';

/*
 * Connections to a host a user named (a webhook's receiver, an MCP server) go to addresses that were checked against
 * the server's own network: the resolver below checks every address a name has and hands on only those, so a DNS
 * answer that changes between a check and a connection (rebinding) cannot lead inside.
 */

/** Which hosts on the server's own network a caller may still reach, and how it says what allows one. */
export interface AddressRule {
  /** Whether `host` (as written in the URL) may be reached although it resolves to the server's own network. */
  allowsInternal(host: string): boolean;
  /** The end of the refusal: "<host> resolves to … (loopback, link-local or private): <refusal>". */
  refusal: string;
}

/** A connection refused because its host is on the server's own network. */
export class InternalAddressError extends Error {
  override name = 'InternalAddressError';
  constructor(
    readonly host: string,
    refusal: string,
  ) {
    super(`${host} resolves to an address on the server's own network (loopback, link-local or private): ${refusal}`);
  }
}

/** `localhost` and its subdomains name the loopback interface whatever DNS says (RFC 6761). */
export const isLocalhostName = (host: string) => /(^|\.)localhost\.?$/i.test(host);

/**
 * The resolver a connection is made with (Node's `lookup` option): every address the name has now is checked, and
 * the connection goes to the ones checked. Node asks for one address or, when it tries several (autoSelectFamily),
 * for all of them. `resolve` is the system's resolver; a test gives one whose answers change.
 */
export function guardedLookup(rule: AddressRule, resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      if (addresses.length === 0) return callback(new Error(`${hostname} has no address`), '', 0);
      const internal = isLocalhostName(hostname) || addresses.some((a) => isInternalAddress(a.address));
      if (internal && !rule.allowsInternal(hostname)) {
        return callback(new InternalAddressError(hostname, rule.refusal), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** The same rule for a URL whose host is an address literal, which Node connects to without a lookup. */
export function checkAddressLiteral(url: URL, rule: AddressRule): void {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) && isInternalAddress(host) && !rule.allowsInternal(host)) {
    throw new InternalAddressError(host, rule.refusal);
  }
}
