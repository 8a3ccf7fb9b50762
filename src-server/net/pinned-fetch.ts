import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';

/** The fetch a client library takes: a URL and a request's options. */
export type PinnedFetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Answers that have no body, which a Response must not be given one for. */
const NO_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * A fetch whose connections go to `addresses` alone (those a check found for the host: guarded-lookup.ts), whatever
 * DNS answers later, so that a name cannot be rebound to the server's own network between the check and a request.
 * TLS still verifies the certificate against the URL's host. It follows no redirect (the caller decides), and keeps
 * its connections alive in agents of its own, which close() ends.
 */
export function pinnedFetch(addresses: readonly LookupAddress[]): { fetch: PinnedFetch; close(): void } {
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, [...addresses]);
    const chosen = addresses.find((a) => !options.family || a.family === options.family) ?? addresses[0]!;
    callback(null, chosen.address, chosen.family);
  };
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  const fetch: PinnedFetch = (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input);
      const secure = url.protocol === 'https:';
      const method = (init.method ?? 'GET').toUpperCase();
      const request = (secure ? https : http).request(
        url,
        {
          method,
          headers: Object.fromEntries(new Headers(init.headers)),
          agent: secure ? agents.https : agents.http,
          lookup,
          signal: init.signal ?? undefined,
        },
        (response) => {
          try {
            const status = response.statusCode ?? 0;
            const headers = new Headers();
            for (const [name, value] of Object.entries(response.headers)) {
              for (const one of [value ?? []].flat()) headers.append(name, one);
            }
            const empty = NO_BODY.has(status) || method === 'HEAD';
            const body = empty ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>);
            if (empty) response.resume();
            resolve(new Response(body, { status, statusText: response.statusMessage, headers }));
          } catch (error) {
            // A status a Response cannot carry (below 200 or above 599): no answer a client can read.
            response.destroy();
            reject(error as Error);
          }
        },
      );
      request.on('error', reject);
      if (init.body !== undefined && init.body !== null && typeof init.body !== 'string') {
        request.destroy(new TypeError('this fetch sends text bodies only'));
        return;
      }
      request.end(init.body ?? undefined);
    });
  return {
    fetch,
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
