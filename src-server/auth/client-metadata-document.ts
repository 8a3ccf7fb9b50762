import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { checkAddressLiteral, guardedLookup, InternalAddressError, type AddressRule } from '../net/guarded-lookup';
import { pinnedFetch } from '../net/pinned-fetch';
import { OauthRefusal } from './oauth-refusal';

/** A metadata document is small: a client that serves more is refused, not read on. */
export const METADATA_DOCUMENT_MAX_BYTES = 16 * 1024;
export const METADATA_DOCUMENT_TIMEOUT_MS = 5000;
/** How long a document is kept before it is fetched again: what its Cache-Control says, within these bounds. */
const KEEP_MIN_S = 5 * 60;
const KEEP_MAX_S = 24 * 3600;
const KEEP_DEFAULT_S = 3600;

/** A client's metadata document is never fetched from the server's own network, whatever its name resolves to. */
const RULE: AddressRule = {
  allowsInternal: () => false,
  refusal: 'client metadata documents are fetched from public addresses only',
};

/** Whether a client id is a metadata document's address (an https URL with a path), not a registered id. */
export function isMetadataDocumentId(clientId: string): boolean {
  return clientId.startsWith('https://');
}

const refuse = (message: string) => new OauthRefusal('invalid_client', message);

/** The redirect addresses a client may name: https, http on loopback (RFC 8252), or an app's own scheme. */
export function checkRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || !URL.canParse(value)) throw refuse(`redirect_uri ${String(value)} is not a URL`);
  const url = new URL(value);
  if (url.hash) throw refuse(`redirect_uri ${value} must not have a fragment`);
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (['javascript', 'data', 'file', 'vbscript', 'blob', 'about'].includes(scheme)) {
    throw refuse(`redirect_uri ${value}: the ${scheme} scheme cannot receive a code`);
  }
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  if (scheme === 'http' && !loopback) throw refuse(`redirect_uri ${value} must be https (http on loopback only)`);
  return value;
}

function keepSeconds(cacheControl: string | null): number {
  const maxAge = /max-age=(\d+)/i.exec(cacheControl ?? '')?.[1];
  const seconds = maxAge === undefined ? KEEP_DEFAULT_S : Number(maxAge);
  return Math.min(KEEP_MAX_S, Math.max(KEEP_MIN_S, seconds));
}

/**
 * Fetches and checks a client ID metadata document (draft-ietf-oauth-client-id-metadata-document): the client's id is
 * the https URL it is served at, and the document must name that same id. Its host is checked as an outgoing address
 * (never the server's own network: a client names any URL it likes), the connection goes to the addresses checked,
 * no redirect is followed, and the answer is capped in time and size. A document cannot hold a secret: the client is
 * public and proves itself with PKCE.
 */
export async function fetchClientMetadataDocument(
  clientId: string,
  resolve: typeof dnsLookup = dnsLookup,
): Promise<{ metadata: ReturnType<typeof checkDocument>; keepS: number }> {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw refuse('client_id is not a valid URL');
  }
  if (url.protocol !== 'https:' || url.pathname === '/' || url.hash || url.username || url.password) {
    throw refuse('a client_id URL must be https, with a path, and no fragment or credentials');
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: LookupAddress[];
  try {
    if (isIP(host)) {
      checkAddressLiteral(url, RULE);
      addresses = [{ address: host, family: isIP(host) }];
    } else {
      addresses = await new Promise((ok, fail) =>
        guardedLookup(RULE, resolve)(host, { all: true }, (error, found) =>
          error ? fail(error) : ok(found as unknown as LookupAddress[]),
        ),
      );
    }
  } catch (error) {
    if (error instanceof InternalAddressError) throw refuse(`client_id ${url.origin}: ${error.message}`);
    throw refuse(`client_id ${url.origin}: its host could not be resolved`);
  }
  const pinned = pinnedFetch(addresses);
  try {
    const res = await pinned.fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(METADATA_DOCUMENT_TIMEOUT_MS),
    });
    if (res.status !== 200) throw refuse(`client_id ${url.href} answered ${res.status}, not its metadata document`);
    const text = await readCapped(res);
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw refuse(`client_id ${url.href} is not a JSON metadata document`);
    }
    return { metadata: checkDocument(document, url.href), keepS: keepSeconds(res.headers.get('cache-control')) };
  } catch (error) {
    if (error instanceof OauthRefusal) throw error;
    throw refuse(`client_id ${url.href} could not be fetched in time`);
  } finally {
    pinned.close();
  }
}

async function readCapped(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > METADATA_DOCUMENT_MAX_BYTES) {
      await reader.cancel();
      throw refuse(`the client's metadata document is over ${METADATA_DOCUMENT_MAX_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** What the service keeps of a document: the fields it reads, each checked. */
export function checkDocument(document: unknown, clientId: string) {
  if (!document || typeof document !== 'object' || Array.isArray(document)) {
    throw refuse('the client metadata document is not a JSON object');
  }
  const doc = document as Record<string, unknown>;
  if (doc.client_id !== clientId) throw refuse(`the metadata document's client_id is not ${clientId}, its own address`);
  if ('client_secret' in doc || 'client_secret_expires_at' in doc) {
    throw refuse('a client metadata document must not carry a client secret');
  }
  const method = doc.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') {
    throw refuse(`token_endpoint_auth_method ${String(method)} is not offered to such clients: use none (with PKCE)`);
  }
  if (!Array.isArray(doc.redirect_uris) || doc.redirect_uris.length === 0) {
    throw refuse('the client metadata document names no redirect_uris');
  }
  const text = (value: unknown, max: number) =>
    typeof value === 'string' && value.trim() ? value.trim().slice(0, max) : undefined;
  const home = text(doc.client_uri, 2000);
  return {
    client_id: clientId,
    redirect_uris: doc.redirect_uris.map(checkRedirectUri),
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    ...(text(doc.client_name, 100) ? { client_name: text(doc.client_name, 100) } : {}),
    ...(home && /^https:\/\//.test(home) ? { client_uri: home } : {}),
  };
}
