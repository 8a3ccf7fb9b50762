import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { openKeychain } from './keychain';

/** Against a real Secret Service: run with `npm run test:keychain` (it starts D-Bus and gnome-keyring). */
it('stores, reads and deletes a secret in the operating system keychain', async () => {
  const keychain = await openKeychain(`agent-workflow-service-test-${randomUUID()}`);
  expect(keychain.reason).toBeNull();
  expect(keychain.available).toBe(true);
  await keychain.set('CLOUD_B_API_KEY', 'sk-test-value');
  expect(await keychain.get('CLOUD_B_API_KEY')).toBe('sk-test-value');
  await keychain.delete('CLOUD_B_API_KEY');
  expect(await keychain.get('CLOUD_B_API_KEY')).toBeNull();
});

it('says there is no keychain when the binding cannot load', async () => {
  const keychain = await openKeychain('x', async () => {
    throw new Error('Cannot find module keytar');
  });
  expect(keychain).toMatchObject({ available: false, reason: 'Cannot find module keytar' });
  await expect(keychain.set('SESSION_SECRET', 'x')).rejects.toThrow('no keychain');
});
