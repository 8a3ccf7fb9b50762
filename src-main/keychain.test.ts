import { describe, expect, it } from 'vitest';
import { openKeychain, type Keytar } from './keychain';
import { resolveServerEnv } from './settings';

/** What a machine without the optional binding (no libsecret headers at install time) has: no such module. */
const missingBinding = async (): Promise<Keytar> =>
  import(/* @vite-ignore */ `./keytar-binding-not-installed-${process.pid}.js`);

describe('the keychain without its optional binding', () => {
  it('says "no keychain" and the server takes its secrets from the environment', async () => {
    const keychain = await openKeychain('agent-workflow-service-test', missingBinding);
    expect(keychain.available).toBe(false);
    expect(keychain.reason).toMatch(/Cannot find module|ERR_MODULE_NOT_FOUND|Failed to load/);
    await expect(keychain.set('CLOUD_B_API_KEY', 'x')).rejects.toThrow(/^no keychain: /);
    expect(await keychain.get('CLOUD_B_API_KEY')).toBeNull();

    const env = await resolveServerEnv({
      userDataDir: '/home/u/.config/app',
      port: 8000,
      apiToken: 'per-launch-token-0123456789',
      env: { CLOUD_B_API_KEY: 'from-the-environment' },
      keychain,
      settings: { database: { mode: 'embedded' }, localLlmBase: null },
    });
    expect(env.CLOUD_B_API_KEY).toBe('from-the-environment');
    expect(env.DATA_DIR).toBe('/home/u/.config/app/data');
  });
});
