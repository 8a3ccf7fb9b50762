import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID, type Member } from '../../src-server/contracts/tenancy';
import type { OidcProvider } from '../fixtures/oidc-provider';
import type { McpGrant } from '../../src-server/contracts/oauth';
import { BrowserAgent, signInAtProvider } from '../helpers/browser-agent';
import { mcpInitialize } from '../helpers/mcp-initialize';
import { useIntegrationServer } from '../helpers/integration';
import { startOidcServer } from '../helpers/oidc-server';
import type { TestServer } from '../helpers/server';

const ctx = useIntegrationServer({ server: false });
const API_TOKEN = 'api-token-for-the-mcp-oauth-test-0123456789';
let provider: OidcProvider;
let server: TestServer;

beforeAll(async () => {
  ({ provider, server } = await startOidcServer(ctx, {
    SESSION_SECRET: 'session-secret-for-the-mcp-oauth-test-0123',
    SVC_API_TOKEN: API_TOKEN,
  }));
});
afterAll(async () => {
  await server?.close();
  await provider?.close();
});

const REDIRECT = 'http://127.0.0.1:47123/oauth/callback';
const atRedirect = (url: string) => url.startsWith('http://127.0.0.1:47123/');

/** What an MCP client keeps between runs (its registration, tokens, the PKCE verifier), in memory. */
class MemoryClientProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  constructor(private readonly name: string) {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const mcpUrl = () => new URL(`${server.url}/mcp`);

async function connectWith(auth: OAuthClientProvider): Promise<Client> {
  const client = new Client({ name: 'oauth-test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: auth }));
  return client;
}

/**
 * The whole sign-in of an MCP client, as its person lives it: the client is refused, finds the authorization server,
 * registers and sends her browser to it; she signs in at the OpenID provider and allows the client on the service's
 * consent page; the client exchanges the code (with its PKCE verifier) and connects.
 */
async function signIn(login: string, name = 'Test assistant'): Promise<{ auth: MemoryClientProvider; client: Client }> {
  const auth = new MemoryClientProvider(name);
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: auth });
  await expect(new Client({ name: 'oauth-test-client', version: '1.0.0' }).connect(transport)).rejects.toThrow(
    UnauthorizedError,
  );
  expect(auth.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
  const browser = new BrowserAgent();
  const consent = await signInAtProvider(browser, auth.authorizationUrl!.href, provider.issuer, login, atRedirect);
  expect(consent.url).toContain(`${server.url}/oauth/consent?request=`);
  expect(consent.html).toContain(name);
  expect(consent.html).toContain('the service cannot vouch for it');
  const back = await browser.submit(consent, { decision: 'allow' }, atRedirect);
  const code = new URL(back.url).searchParams.get('code');
  expect(new URL(back.url).searchParams.get('iss')).toBe(server.url);
  await transport.finishAuth(code!);
  return { auth, client: await connectWith(auth) };
}

const text = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

describe('MCP clients sign in with OAuth, through the service, at the OpenID provider', () => {
  it('names the service as the authorization server, at its own address, with PKCE and metadata documents', async () => {
    const resource = await (await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(resource).toMatchObject({ resource: `${server.url}/mcp`, authorization_servers: [server.url] });
    const metadata = await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json();
    expect(metadata).toMatchObject({
      issuer: server.url,
      authorization_endpoint: `${server.url}/oauth/authorize`,
      code_challenge_methods_supported: ['S256'],
      client_id_metadata_document_supported: true,
      scopes_supported: ['mcp'],
    });
    const refused = await fetch(mcpUrl(), { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
    );
  });

  it("signs a person in with the SDK's OAuth client and calls list_agents as her, with her roles read at each call", async () => {
    const { auth, client } = await signIn('ann-oauth');
    const agents = await client.callTool({ name: 'list_agents', arguments: {} });
    expect(agents.isError).toBeFalsy();
    expect(text(agents)).toContain('"summary"');
    expect(auth.saved?.access_token).toMatch(/^svcoat_/);
    expect(auth.saved?.refresh_token).toMatch(/^svcort_/);
    expect(auth.saved?.expires_in).toBe(3600);

    // Her roles are read at each request: made a viewer of the project, she may no longer start a run there.
    const me = await (
      await fetch(`${server.url}/auth/me`, { headers: { authorization: `Bearer ${auth.saved!.access_token}` } })
    ).status;
    expect(me).toBe(401); // an MCP token is for /mcp, not for the HTTP API
    const members = (await (await server.request(`/orgs/${DEFAULT_ORG_ID}/members`)).json()) as Member[];
    const ann = members.find((m) => m.name === 'User ann-oauth')!;
    expect(ann.role).toBe('admin'); // the first person to sign in
    const before = await client.callTool({
      name: 'run_agent',
      arguments: { agent: 'summary', message: 'summarise it', project_id: DEFAULT_PROJECT_ID },
    });
    expect(before.isError).toBeFalsy();
    const demoted = await server.request(`/orgs/${DEFAULT_ORG_ID}/members/${ann.user_id}`, {
      method: 'PUT',
      json: { role: 'viewer' },
    });
    expect(demoted.status).toBe(200);
    const after = await client.callTool({
      name: 'run_agent',
      arguments: { agent: 'summary', message: 'summarise it', project_id: DEFAULT_PROJECT_ID },
    });
    expect(after.isError).toBe(true);
    expect(text(after)).toMatch(/role|viewer|forbidden/i);
    await client.close();
  });
});

/** PKCE's pair: a verifier, and its S256 challenge. */
function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

async function register(redirectUris = [REDIRECT], name = 'Raw client'): Promise<string> {
  const res = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: name, redirect_uris: redirectUris, token_endpoint_auth_method: 'none' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { client_id: string }).client_id;
}

function authorizeUrl(clientId: string, challenge: string, extra: Record<string, string> = {}): string {
  const url = new URL(`${server.url}/oauth/authorize`);
  for (const [key, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'state-123',
    ...extra,
  }))
    url.searchParams.set(key, value);
  return url.href;
}

/** Signs `login` in for a client and allows it: the client's redirect, with its code. */
async function allowedRedirect(login: string, clientId: string, challenge: string, extra?: Record<string, string>) {
  const browser = new BrowserAgent();
  const consent = await signInAtProvider(
    browser,
    authorizeUrl(clientId, challenge, extra),
    provider.issuer,
    login,
    atRedirect,
  );
  const back = await browser.submit(consent, { decision: 'allow' }, atRedirect);
  return new URL(back.url);
}

const token = (form: Record<string, string>) =>
  fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });

async function exchange(clientId: string, code: string, verifier: string): Promise<OAuthTokens> {
  const res = await token({ grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier });
  expect(res.status).toBe(200);
  return (await res.json()) as OAuthTokens;
}

const mcpPing = (accessToken: string) => mcpInitialize(mcpUrl().href, accessToken);

describe('the authorization server refuses what it must', () => {
  it('checks PKCE, uses a code once, and gives the code only with the state and issuer', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const back = await allowedRedirect('bob-oauth', clientId, challenge);
    expect(back.searchParams.get('state')).toBe('state-123');
    const code = back.searchParams.get('code')!;
    const wrong = await token({
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      code_verifier: pkce().verifier,
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant' });
    const tokens = await exchange(clientId, code, verifier);
    expect((await mcpPing(tokens.access_token)).status).toBe(200);
    const again = await token({ grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier });
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('matches redirect_uri exactly, but for the port of a loopback address (RFC 8252)', async () => {
    const clientId = await register(['https://app.example/cb', REDIRECT]);
    const { challenge } = pkce();
    const other = await fetch(authorizeUrl(clientId, challenge, { redirect_uri: 'https://app.example/cb/other' }), {
      redirect: 'manual',
    });
    expect(other.status).toBe(400);
    expect(await other.json()).toMatchObject({
      error: 'invalid_request',
      error_description: 'Unregistered redirect_uri',
    });
    const port = await fetch(
      authorizeUrl(clientId, challenge, { redirect_uri: 'http://127.0.0.1:49999/oauth/callback' }),
      { redirect: 'manual' },
    );
    expect(port.status).toBe(302);
    expect(port.headers.get('location')).toContain(provider.issuer);
    const refused = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'x', redirect_uris: ['http://app.example/cb'] }),
    });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error_description).toContain('must be https');
  });

  it('issues tokens for its own /mcp only: another resource is refused, asked for or presented', async () => {
    const clientId = await register();
    const asked = await fetch(authorizeUrl(clientId, pkce().challenge, { resource: 'https://other.example/mcp' }), {
      redirect: 'manual',
    });
    const location = new URL(asked.headers.get('location')!);
    expect(location.href.startsWith(REDIRECT)).toBe(true);
    expect(location.searchParams.get('error')).toBe('invalid_target');
    expect(location.searchParams.get('state')).toBe('state-123');

    // The same database behind another public address is another resource: a token of this one is no good there.
    const { verifier, challenge } = pkce();
    const code = (await allowedRedirect('carol-oauth', clientId, challenge)).searchParams.get('code')!;
    const tokens = await exchange(clientId, code, verifier);
    const elsewhere = await ctx.start({
      AUTH_ENABLED: 'true',
      OIDC_ISSUER_URL: provider.issuer,
      OIDC_CLIENT_ID: 'svc',
      PUBLIC_URL: 'https://agents.example.com',
      SESSION_SECRET: 'session-secret-for-the-mcp-oauth-test-0123',
    });
    try {
      const refused = await fetch(`${elsewhere.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(refused.status).toBe(401);
      expect((await refused.json()).error.message).toBe(
        `this token was issued for ${server.url}/mcp and is not accepted here`,
      );
      // Its issuer is PUBLIC_URL, whatever Host a request names.
      const metadata = await (
        await fetch(`${elsewhere.url}/.well-known/oauth-authorization-server`, {
          headers: { 'x-forwarded-host': 'evil.example' },
        })
      ).json();
      expect(metadata.issuer).toBe('https://agents.example.com');
      expect(metadata.token_endpoint).toBe('https://agents.example.com/oauth/token');
    } finally {
      await elsewhere.close();
    }
    // An OpenID provider's own token is not one of this service's.
    expect((await mcpPing('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjYXJvbCJ9.c2ln')).status).toBe(401);
  });

  it('rotates refresh tokens; a refresh token used twice ends the grant', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const code = (await allowedRedirect('dave-oauth', clientId, challenge)).searchParams.get('code')!;
    const first = await exchange(clientId, code, verifier);
    const refreshed = await token({
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: first.refresh_token!,
    });
    expect(refreshed.status).toBe(200);
    const second = (await refreshed.json()) as OAuthTokens;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await mcpPing(second.access_token)).status).toBe(200);
    const replayed = await token({
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: first.refresh_token!,
    });
    expect(await replayed.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await mcpPing(second.access_token)).status).toBe(401);
  });

  it('asks no one else: a consent page opened in another browser, and a denial, give no code', async () => {
    const clientId = await register();
    const browser = new BrowserAgent();
    const consent = await signInAtProvider(
      browser,
      authorizeUrl(clientId, pkce().challenge),
      provider.issuer,
      'erin-oauth',
      atRedirect,
    );
    const stranger = await new BrowserAgent().go(consent.url);
    expect(stranger.status).toBe(409);
    expect(stranger.html).toContain('Nothing to allow here');
    const denied = await browser.submit(consent, { decision: 'deny' }, atRedirect);
    expect(new URL(denied.url).searchParams.get('error')).toBe('access_denied');
    expect(new URL(denied.url).searchParams.get('state')).toBe('state-123');
    expect(new URL(denied.url).searchParams.get('code')).toBeNull();
  });

  it("never fetches a client's metadata document from the server's own network", async () => {
    const res = await fetch(authorizeUrl('https://127.0.0.1:9/client.json', pkce().challenge), { redirect: 'manual' });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error).toBe('invalid_client');
    expect(body.error_description).toContain("server's own network");
  });
});

describe('a person signs her MCP clients out in Settings', () => {
  it('lists the clients she allowed, and a revoked one answers 401', async () => {
    const { auth, client } = await signIn('frank-oauth', 'Frank’s editor');
    const browser = new BrowserAgent();
    const landed = await signInAtProvider(browser, `${server.url}/auth/login`, provider.issuer, 'frank-oauth', (url) =>
      url.includes('/ui#token='),
    );
    const session = decodeURIComponent(/#token=([^&]+)/.exec(landed.url)![1]!);
    const headers = { authorization: `Bearer ${session}` };
    const grants = (await (await fetch(`${server.url}/me/mcp-grants`, { headers })).json()) as McpGrant[];
    expect(grants.map((g) => g.client_name)).toEqual(['Frank’s editor']);
    const revoked = await fetch(`${server.url}/me/mcp-grants/${grants[0]!.id}/revoke`, { method: 'POST', headers });
    expect(revoked.status).toBe(204);
    expect((await mcpPing(auth.saved!.access_token)).status).toBe(401);
    await expect(client.callTool({ name: 'list_agents', arguments: {} })).rejects.toThrow();
    expect(await (await fetch(`${server.url}/me/mcp-grants`, { headers })).json()).toEqual([]);
    // Another person's grant is one that does not exist.
    const other = await fetch(`${server.url}/me/mcp-grants/${grants[0]!.id}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_TOKEN}` },
    });
    expect(other.status).toBe(404);
    expect((await fetch(`${server.url}/me/mcp-grants`)).status).toBe(401);
  });
});

describe('dynamic registration is rate-limited', () => {
  it('answers 429 past 20 registrations an hour from one address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i += 1) {
      const res = await fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          client_name: `flood ${i}`,
          redirect_uris: [REDIRECT],
          token_endpoint_auth_method: 'none',
        }),
      });
      statuses.push(res.status);
    }
    expect(statuses).toContain(429);
  });
});

describe('a server without OIDC', () => {
  it('has no authorization server: personal access tokens are the way, and its metadata says so', async () => {
    const plain = await ctx.start({ AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN });
    try {
      expect((await fetch(`${plain.url}/.well-known/oauth-authorization-server`)).status).toBe(404);
      expect((await fetch(`${plain.url}/oauth/register`, { method: 'POST' })).status).toBe(404);
      const metadata = await (await fetch(`${plain.url}/.well-known/oauth-protected-resource/mcp`)).json();
      expect(metadata.authorization_servers).toBeUndefined();
      expect(metadata.resource_name).toContain('personal access token');
    } finally {
      await plain.close();
    }
  });
});
