import type { StoredSecretName } from './desktop-api';
import { errorMessage } from '../src-server/contracts/errors';

export const KEYCHAIN_SERVICE = 'agent-workflow-service';

/**
 * Secrets in the operating system's keychain. keytar is the one binding used today; it sits behind
 * this small interface so it can be swapped for a maintained one without touching callers.
 */
export interface Keychain {
  readonly available: boolean;
  readonly reason: string | null;
  get(name: StoredSecretName): Promise<string | null>;
  set(name: StoredSecretName, value: string): Promise<void>;
  delete(name: StoredSecretName): Promise<void>;
}

/** The part of keytar's API used here, written out so that its types are not needed. */
export type Keytar = {
  getPassword(service: string, account: string): Promise<string | null>;
  setPassword(service: string, account: string, password: string): Promise<void>;
  deletePassword(service: string, account: string): Promise<boolean>;
};

function unavailable(reason: string): Keychain {
  const refuse = async () => {
    throw new Error(`no keychain: ${reason}`);
  };
  return { available: false, reason, get: async () => null, set: refuse, delete: refuse };
}

/**
 * keytar is an optional dependency: `npm install` skips it where libsecret's headers are missing. So its
 * name is not a literal import: neither the type check nor the bundle depends on it being installed,
 * and only this function finds out, at run time.
 */
const KEYTAR_MODULE = 'keytar';

async function loadKeytar(): Promise<Keytar> {
  const module = (await import(/* @vite-ignore */ KEYTAR_MODULE)) as { default?: Keytar } & Keytar;
  return module.default ?? module;
}

/** Opens the keychain, or says why there is none (no binding, no Secret Service running). */
export async function openKeychain(
  service = KEYCHAIN_SERVICE,
  load: () => Promise<Keytar> = loadKeytar,
): Promise<Keychain> {
  let keytar: Keytar;
  try {
    keytar = await load();
    // A probe read: fails when the binding loads but no Secret Service answers.
    await keytar.getPassword(service, '__probe__');
  } catch (error) {
    return unavailable(errorMessage(error));
  }
  return {
    available: true,
    reason: null,
    get: (name) => keytar.getPassword(service, name),
    set: (name, value) => keytar.setPassword(service, name, value),
    delete: async (name) => {
      await keytar.deletePassword(service, name);
    },
  };
}
