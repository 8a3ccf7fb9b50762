import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { badRequest } from '../contracts/errors';
import { isLocalhostName, type AddressRule } from '../net/guarded-lookup';
import { isInternalAddress } from '../net/internal-address';

/** How long a registration waits for the host's addresses; a host that does not answer is checked at delivery. */
const REGISTRATION_LOOKUP_MS = 3000;

/** The URL fit for a log line: scheme, host and port, as a webhook's path or query often carries a token. */
export function webhookOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

const ownNetwork = (host: string) =>
  `url: ${host} is on the server's own network (loopback, link-local or private address), where webhooks are not ` +
  'sent: set WEBHOOK_ALLOW_PRIVATE_URLS=true to allow it';

const refuse = (message: string) =>
  badRequest(`invalid request body: ${message}`, {
    fields: [{ field: 'url', message: message.replace(/^url: /, '') }],
  });

/**
 * Checks a URL at registration and returns it as it will be used: http or https, no credentials (the signature
 * authenticates the sender; a password in the URL would be stored and shown), and unless `allowPrivate`, a host that
 * is not on the server's own network: an address literal is checked as it is, a name by what it resolves to now.
 * A name that does not resolve now is accepted: the address is checked again at every delivery (DNS may change).
 */
export async function checkWebhookUrl(value: string, options: { allowPrivate: boolean }): Promise<string> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse('url: not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse(`url: must be an http or https URL, not ${url.protocol.slice(0, -1)}`);
  }
  if (url.username || url.password) {
    throw refuse('url: must not carry a user name or password: each delivery is signed with the webhook secret');
  }
  if (options.allowPrivate) return url.href;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host)) {
    if (isInternalAddress(host)) throw refuse(ownNetwork(host));
    return url.href;
  }
  if (isLocalhostName(host)) throw refuse(ownNetwork(host));
  const addresses = await Promise.race([
    lookup(host, { all: true, verbatim: true }).then(
      (found) => found.map((a) => a.address),
      () => [],
    ),
    new Promise<string[]>((resolve) => setTimeout(() => resolve([]), REGISTRATION_LOOKUP_MS).unref()),
  ]);
  if (addresses.some(isInternalAddress)) throw refuse(ownNetwork(host));
  return url.href;
}

/** The address rule of a delivery: the server's own network only with WEBHOOK_ALLOW_PRIVATE_URLS. */
export function webhookAddressRule(allowPrivate: boolean): AddressRule {
  return {
    allowsInternal: () => allowPrivate,
    refusal: 'not sent (WEBHOOK_ALLOW_PRIVATE_URLS=true allows it)',
  };
}
