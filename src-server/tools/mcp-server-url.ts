import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isInternalAddress } from '../net/internal-address';
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

/**
 * Checks an http MCP server's URL before it is reached: http or https, no credentials in it (headers carry them, from
 * the environment), and a host that is not on the server's own network (the rule of git clones and webhooks,
 * net/internal-address.ts) unless `allowedHosts` names it. A name is checked by every address it resolves to now.
 */
export async function checkMcpServerUrl(
  name: string,
  value: string,
  allowedHosts: readonly string[],
  signal: AbortSignal,
): Promise<URL> {
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
  if (allowedHosts.some((allowed) => allowed.toLowerCase().replace(/^\[(.*)\]$/, '$1') === host.toLowerCase())) {
    return url;
  }
  const addresses = isIP(host) ? [host] : await resolve(name, host, signal);
  if (addresses.some(isInternalAddress)) {
    throw new McpServerError(
      `MCP server "${name}": ${origin} leads to an address on the server's own network (loopback, link-local or ` +
        `private), which is not reached unless the service's allowed MCP hosts name ${host}`,
    );
  }
  return url;
}

async function resolve(name: string, host: string, signal: AbortSignal): Promise<string[]> {
  try {
    const found = await abortable(lookup(host, { all: true, verbatim: true }), signal);
    if (found.length === 0) throw new Error('no address');
    return found.map((a) => a.address);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new McpServerError(`MCP server "${name}": its host ${host} could not be resolved`);
  }
}
