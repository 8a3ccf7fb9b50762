import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { checkDocument, checkRedirectUri, fetchClientMetadataDocument } from './client-metadata-document';

const ID = 'https://assistant.example/oauth/client.json';
const valid = { client_id: ID, client_name: 'Assistant', redirect_uris: ['https://assistant.example/cb'] };

/** A resolver whose every name has these addresses: DNS as an attacker who owns the name would answer. */
const resolvesTo =
  (...addresses: string[]) =>
  (_host: string, _options: unknown, callback: (e: null, a: LookupAddress[]) => void) =>
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );

describe("a client's metadata document", () => {
  it('keeps what it reads of a valid one: a public client with PKCE, its redirect addresses, its name', () => {
    expect(checkDocument({ ...valid, client_uri: 'https://assistant.example', logo_uri: 'x' }, ID)).toEqual({
      client_id: ID,
      client_name: 'Assistant',
      client_uri: 'https://assistant.example',
      redirect_uris: ['https://assistant.example/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
  });

  it('refuses one that names another id, holds a secret, lists no redirect, or asks for client secrets', () => {
    expect(() => checkDocument({ ...valid, client_id: 'https://evil.example/c.json' }, ID)).toThrow(
      "the metadata document's client_id is not https://assistant.example/oauth/client.json, its own address",
    );
    expect(() => checkDocument({ ...valid, client_secret: 's' }, ID)).toThrow('must not carry a client secret');
    expect(() => checkDocument({ ...valid, redirect_uris: [] }, ID)).toThrow('names no redirect_uris');
    expect(() => checkDocument({ ...valid, token_endpoint_auth_method: 'client_secret_basic' }, ID)).toThrow(
      'use none (with PKCE)',
    );
    expect(() => checkDocument([valid], ID)).toThrow('not a JSON object');
  });

  it('takes https, http on loopback and an app scheme as redirects; never script, data or plain http elsewhere', () => {
    for (const ok of ['https://a.example/cb', 'http://127.0.0.1:3000/cb', 'http://localhost/cb', 'cursor://a/cb']) {
      expect(checkRedirectUri(ok)).toBe(ok);
    }
    expect(() => checkRedirectUri('javascript:alert(1)')).toThrow('the javascript scheme cannot receive a code');
    expect(() => checkRedirectUri('data:text/html,x')).toThrow('cannot receive a code');
    expect(() => checkRedirectUri('http://a.example/cb')).toThrow('must be https (http on loopback only)');
    expect(() => checkRedirectUri('https://a.example/cb#x')).toThrow('must not have a fragment');
  });

  it("is fetched only over https, from a path, and never from the server's own network", async () => {
    await expect(fetchClientMetadataDocument('http://assistant.example/c.json')).rejects.toThrow('must be https');
    await expect(fetchClientMetadataDocument('https://assistant.example/')).rejects.toThrow('with a path');
    for (const inside of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '::1']) {
      await expect(fetchClientMetadataDocument(ID, resolvesTo('93.184.216.34', inside) as never)).rejects.toThrow(
        "on the server's own network",
      );
    }
    await expect(fetchClientMetadataDocument('https://192.168.1.10/client.json')).rejects.toThrow(
      "on the server's own network",
    );
  });
});
