import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDesktop } from './desktop';
import { MCP_TOKEN_SECRET, type StoredSecretName } from './desktop-api';
import type { Keychain } from './keychain';
import { mcpClientConfig } from '../src-server/contracts/mcp-client-config';
import { mcpClient, readMcpToken, replaceMcpToken } from './mcp-client';

const TOKEN = `svcpat_${'a'.repeat(43)}`;
const ID = '6f1c1a4e-3b59-4c39-9a57-2f0f3c1f4b11';

function memoryKeychain(values: Partial<Record<StoredSecretName, string>> = {}): Keychain {
  return {
    available: true,
    reason: null,
    get: async (name) => values[name] ?? null,
    set: async (name, value) => void (values[name] = value),
    delete: async (name) => void delete values[name],
  };
}

describe('the MCP client configuration the desktop shows', () => {
  it('names the server’s /mcp endpoint and sends the token as a bearer', () => {
    expect(JSON.parse(mcpClientConfig('http://127.0.0.1:8000', TOKEN))).toEqual({
      mcpServers: {
        'agent-workflow': {
          type: 'http',
          url: 'http://127.0.0.1:8000/mcp',
          headers: { Authorization: `Bearer ${TOKEN}` },
        },
      },
    });
  });

  it('is shown again from the keychain, and only once there is both a server and a token', async () => {
    const keychain = memoryKeychain({ [MCP_TOKEN_SECRET]: JSON.stringify({ id: ID, token: TOKEN }) });
    expect(await mcpClient('http://127.0.0.1:8123', keychain)).toEqual({
      url: 'http://127.0.0.1:8123/mcp',
      token: TOKEN,
      config: mcpClientConfig('http://127.0.0.1:8123', TOKEN),
    });
    expect(await mcpClient(null, keychain)).toEqual({ url: null, token: TOKEN, config: null });
    expect(await mcpClient('http://127.0.0.1:8123', memoryKeychain())).toEqual({
      url: 'http://127.0.0.1:8123/mcp',
      token: null,
      config: null,
    });
  });

  it('takes a value under its keychain name that the app did not write as no token at all', async () => {
    for (const stored of [
      'svcpat_not-json',
      JSON.stringify({ id: ID, token: 'a-session-jwt' }),
      JSON.stringify({ id: '../../orgs', token: TOKEN }),
      JSON.stringify(null),
    ]) {
      expect(await readMcpToken(memoryKeychain({ [MCP_TOKEN_SECRET]: stored })), stored).toBeNull();
    }
  });
});

describe('a new MCP token', () => {
  it('is not made without a keychain to keep it', async () => {
    const keychain: Keychain = { ...memoryKeychain(), available: false, reason: 'no Secret Service' };
    // No server listens on port 9: had a request been sent, it would fail otherwise.
    await expect(
      replaceMcpToken({ serverUrl: 'http://127.0.0.1:9', apiToken: 'per-launch', keychain }),
    ).rejects.toThrow('no keychain (no Secret Service): the app has nowhere to keep a token');
  });

  it('is made through the running server only', async () => {
    const desktop = createDesktop({
      userDataDir: await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-')),
      version: '1.2.3',
      env: {},
      keychain: memoryKeychain(),
      startServer: async () => {
        throw new Error('not started');
      },
    });
    await desktop.start();
    await expect(desktop.api.newMcpToken()).rejects.toThrow('the server is not running: a token is made through it');
    expect(await desktop.api.mcpClient()).toEqual({ url: null, token: null, config: null });
  });
});
