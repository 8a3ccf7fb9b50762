import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DesktopSettings, StoredSecretName } from './desktop-api';
import type { Keychain } from './keychain';
import { readSettings, resolveServerEnv, usableSettings, writeSettings } from './settings';

function memoryKeychain(values: Partial<Record<StoredSecretName, string>>): Keychain {
  return {
    available: true,
    reason: null,
    get: async (name) => values[name] ?? null,
    set: async (name, value) => void (values[name] = value),
    delete: async (name) => void delete values[name],
  };
}

const base = { userDataDir: '/home/u/.config/app', port: 8000, apiToken: 'per-launch-token-0123456789' };

describe('settings resolution', () => {
  it('uses the defaults: embedded database under user data, the per-launch token, a secrets key kept in the keychain', async () => {
    const kept: Partial<Record<StoredSecretName, string>> = {};
    const settings = { database: { mode: 'embedded' as const }, localLlmBase: null };
    const env = await resolveServerEnv({ ...base, env: {}, keychain: memoryKeychain(kept), settings });
    expect(env).toEqual({
      HOST: '127.0.0.1',
      PORT: '8000',
      DATA_DIR: '/home/u/.config/app/data',
      AUTH_ENABLED: 'true',
      SVC_API_TOKEN: 'per-launch-token-0123456789',
      SECRETS_KEY: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/),
    });
    // Made once: the next start seals and opens with the same key.
    expect(kept.SECRETS_KEY).toBe(env.SECRETS_KEY);
    expect((await resolveServerEnv({ ...base, env: {}, keychain: memoryKeychain(kept), settings })).SECRETS_KEY).toBe(
      env.SECRETS_KEY,
    );
    // No keychain: the server keeps a key in its data folder.
    const without = { ...memoryKeychain({}), available: false };
    expect((await resolveServerEnv({ ...base, env: {}, keychain: without, settings })).SECRETS_KEY).toBeUndefined();
  });

  it('takes the environment over the keychain over the settings file', async () => {
    const keychain = memoryKeychain({
      CLOUD_B_API_KEY: 'from-keychain',
      CLOUD_C_API_KEY: 'keychain-c',
      DATABASE_PASSWORD: 's3cret',
    });
    const settings = {
      database: { mode: 'remote' as const, url: 'postgresql://team@db.example:5432/svc' },
      localLlmBase: 'http://gpu-box:11434',
    };
    const env = await resolveServerEnv({
      ...base,
      env: { CLOUD_B_API_KEY: 'from-env', LOCAL_LLM_BASE: '' },
      keychain,
      settings,
    });
    expect(env.CLOUD_B_API_KEY).toBe('from-env');
    expect(env.CLOUD_C_API_KEY).toBe('keychain-c');
    expect(env.LOCAL_LLM_BASE).toBe('http://gpu-box:11434');
    expect(env.DATABASE_URL).toBe('postgresql://team:s3cret@db.example:5432/svc');
    const overridden = await resolveServerEnv({
      ...base,
      env: { DATABASE_URL: 'postgresql://x@localhost/y' },
      keychain,
      settings,
    });
    expect(overridden.DATABASE_URL).toBe('postgresql://x@localhost/y');
  });

  it('never writes a password into the settings file', async () => {
    const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'svc-settings-')), 'settings.json');
    await writeSettings(file, {
      database: { mode: 'remote', url: 'postgresql://team:hunter2@db.example/svc' },
      localLlmBase: null,
    });
    expect(await fs.readFile(file, 'utf8')).not.toContain('hunter2');
    expect(await readSettings(file)).toEqual({
      database: { mode: 'remote', url: 'postgresql://team@db.example/svc' },
      localLlmBase: null,
    });
    expect(await readSettings(`${file}.missing`)).toEqual({ database: { mode: 'embedded' }, localLlmBase: null });
  });

  it('tells the saved values the server cannot start with from the others, whatever the file holds', async () => {
    const runtime =
      'the local model runtime address must be an http:// or https:// URL, such as http://127.0.0.1:11434';
    const database =
      'the database must be embedded, or remote with a postgresql:// URL such as postgresql://user@host:5432/database';
    const check = (saved: unknown) => usableSettings(saved as DesktopSettings);
    expect(check({ database: { mode: 'embedded' }, localLlmBase: '  http://gpu-box:11434  ' })).toEqual({
      settings: { database: { mode: 'embedded' }, localLlmBase: 'http://gpu-box:11434' },
      problems: [],
    });
    expect(check({ database: { mode: 'embedded' }, localLlmBase: ' ' }).problems).toEqual([]);
    expect(check({ database: { mode: 'embedded' }, localLlmBase: 11434 })).toEqual({
      settings: { database: { mode: 'embedded' }, localLlmBase: null },
      problems: [runtime],
    });
    expect(check({ database: { mode: 'remote' }, localLlmBase: 'gpu-box:11434' })).toEqual({
      settings: { database: { mode: 'embedded' }, localLlmBase: null },
      problems: [runtime, database],
    });
    expect(check({ database: 'remote', localLlmBase: null }).problems).toEqual([database]);

    const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'svc-settings-')), 'settings.json');
    await fs.writeFile(file, '"not an object"');
    expect(await readSettings(file)).toEqual({ database: { mode: 'embedded' }, localLlmBase: null });
  });
});
