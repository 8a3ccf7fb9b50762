import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDesktop, type Desktop } from '../../src-main/desktop';
import { MCP_TOKEN_SECRET, type StoredSecretName } from '../../src-main/desktop-api';
import type { Keychain } from '../../src-main/keychain';
import { MCP_TOKEN_NAME } from '../../src-main/mcp-client';
import { mcpClientConfig } from '../../src-server/contracts/mcp-client-config';
import { API_TOKEN_ADMIN } from '../../src-server/auth/principal';
import { captureLogs } from '../../src-server/log';
import { startServer } from '../../src-server/main';
import { registerServer } from '../helpers/contract';
import { createTestDatabase, type TestDatabase } from '../helpers/database';
import { writeFixtureCatalog } from '../helpers/fixture-assets';

/**
 * Settings → MCP clients, as the desktop app's main process does it, without Electron: the app's own server on a
 * real database makes the token through its API, the app keeps it in the keychain (here in memory), and the token
 * outlasts the per-launch API token, which changes at every start.
 */
let db: TestDatabase;
let generatedDir: string;
let desktop: Desktop;
const stored = new Map<StoredSecretName, string>();
const keychain: Keychain = {
  available: true,
  reason: null,
  get: async (name) => stored.get(name) ?? null,
  set: async (name, value) => void stored.set(name, value),
  delete: async (name) => void stored.delete(name),
};
const logs: string[] = [];
let restoreLogs: () => void;
let contract: { stop(): void } | undefined;

/** The server the desktop runs now, its answers checked against its OpenAPI document as every test server's. */
async function started(): Promise<string> {
  const url = desktop.info().apiUrl!;
  contract?.stop();
  contract = registerServer(url);
  return url;
}

const status = async (url: string, token: string) =>
  (await fetch(`${url}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status;

beforeAll(async () => {
  db = await createTestDatabase();
  generatedDir = await writeFixtureCatalog();
  restoreLogs = captureLogs((line) => logs.push(line));
  desktop = createDesktop({
    userDataDir: await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-mcp-')),
    version: '1.2.3',
    env: { DATABASE_URL: db.url, LOCAL_LLM_BASE: 'http://127.0.0.1:9' },
    keychain,
    startServer,
    generatedDir,
  });
  expect(await desktop.start()).toMatchObject({ url: expect.stringContaining('/ui#token=') });
});

afterAll(async () => {
  await desktop?.stop();
  contract?.stop();
  restoreLogs?.();
  await db?.drop();
  await fs.rm(generatedDir, { recursive: true, force: true });
});

describe('the desktop’s MCP client token', () => {
  it('is made for the local user, kept in the keychain, shown with the server’s /mcp address, and replaced', async () => {
    const url = await started();
    expect(await desktop.api.mcpClient()).toEqual({ url: `${url}/mcp`, token: null, config: null });

    const first = await desktop.api.newMcpToken();
    expect(first).toEqual({
      url: `${url}/mcp`,
      token: expect.stringMatching(/^svcpat_/),
      config: mcpClientConfig(url, first.token!),
    });
    expect(JSON.parse(stored.get(MCP_TOKEN_SECRET)!)).toEqual({ id: expect.any(String), token: first.token });
    // It acts as the app's local user, the API token's administrator, as the studio in the window does.
    const me = await (await fetch(`${url}/auth/me`, { headers: { authorization: `Bearer ${first.token}` } })).json();
    expect(me).toMatchObject({ user: { id: API_TOKEN_ADMIN.id, kind: 'api_token' }, instance_admin: true });

    const second = await desktop.api.newMcpToken();
    expect(second.token).not.toBe(first.token);
    expect(await status(url, first.token!)).toBe(401);
    expect(await status(url, second.token!)).toBe(200);
    const listed = await fetch(`${url}/me/tokens`, { headers: { authorization: `Bearer ${second.token}` } });
    expect(((await listed.json()) as { name: string }[]).map((t) => t.name)).toEqual([MCP_TOKEN_NAME]);
    expect(logs.join('\n')).not.toContain(second.token!.slice('svcpat_'.length));
  });

  it('outlasts a restart, whose per-launch token is a new one', async () => {
    const before = desktop.info().apiToken!;
    const { token } = await desktop.api.mcpClient();
    await desktop.api.restartServer();
    const url = await started();
    expect(desktop.info().apiToken).not.toBe(before);
    expect(await status(url, before)).toBe(401);
    expect(await desktop.api.mcpClient()).toEqual({ url: `${url}/mcp`, token, config: mcpClientConfig(url, token!) });
    expect(await status(url, token!)).toBe(200);
  });

  it('is made again when the one kept was revoked elsewhere (in the studio’s list)', async () => {
    const url = await started();
    const { token } = await desktop.api.mcpClient();
    const { id } = JSON.parse(stored.get(MCP_TOKEN_SECRET)!) as { id: string };
    const revoke = await fetch(`${url}/me/tokens/${id}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${desktop.info().apiToken}` },
    });
    expect(revoke.status).toBe(204);
    expect(await status(url, token!)).toBe(401);
    const replaced = await desktop.api.newMcpToken();
    expect(await status(url, replaced.token!)).toBe(200);
  });
});
