import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { checkAddressLiteral, guardedLookup, InternalAddressError, type AddressRule } from '../net/guarded-lookup';
import { abortable } from './abortable';
import { McpServerError } from './mcp-server-error';

/** The URL fit for an error or a log line: scheme, host and port, as a path or a query may carry a token. */
export function mcpUrlOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

/** An http MCP server's URL, and the addresses checked for its host, where its connections go. */
export interface CheckedMcpUrl {
  url: URL;
  addresses: LookupAddress[];
}

/**
 * Checks an http MCP server's URL before it is reached: http or https, no credentials in it (headers carry them, from
 * the environment), and a host that is not on the server's own network (the rule of git clones and webhooks,
 * net/guarded-lookup.ts) unless `allowedHosts` names it. A name is resolved once, here: every address it has is
 * checked, and the server's connections go to those addresses alone (net/pinned-fetch.ts), whatever DNS answers later.
 */
export async function checkMcpServerUrl(
  name: string,
  value: string,
  allowedHosts: readonly string[],
  signal: AbortSignal,
  resolve: typeof dnsLookup = dnsLookup,
): Promise<CheckedMcpUrl> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new McpServerError(`MCP server "${name}": its url is not a valid absolute URL`);
  }
  const origin = url.origin;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new McpServerError(`MCP server "${name}": its url must be http or https, not ${url.protocol.slice(0, -1)}`);
  }
  if (url.username || url.password) {
    throw new McpServerError(
      `MCP server "${name}": its url ${origin} carries a user name or password; name a header and the environment ` +
        'variable that holds it instead',
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const rule = mcpAddressRule(allowedHosts);
  try {
    const family = isIP(host);
    if (family) {
      checkAddressLiteral(url, rule);
      return { url, addresses: [{ address: host, family }] };
    }
    return { url, addresses: await abortable(lookupAll(guardedLookup(rule, resolve), host), signal) };
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof InternalAddressError) {
      throw new McpServerError(
        `MCP server "${name}": ${origin} leads to an address on the server's own network (loopback, link-local or ` +
          `private), which is not reached unless the service's allowed MCP hosts name ${host}`,
      );
    }
    throw new McpServerError(`MCP server "${name}": its host ${host} could not be resolved`);
  }
}

/** The hosts of MCP_ALLOWED_HOSTS may be on the server's own network; the names are compared without case. */
function mcpAddressRule(allowedHosts: readonly string[]): AddressRule {
  const allowed = new Set(allowedHosts.map((host) => host.toLowerCase().replace(/^\[(.*)\]$/, '$1')));
  return {
    allowsInternal: (host) => allowed.has(host.toLowerCase()),
    refusal: 'not reached unless MCP_ALLOWED_HOSTS names it',
  };
}

function lookupAll(lookup: LookupFunction, host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    lookup(host, { all: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses as unknown as LookupAddress[]),
    ),
  );
}
