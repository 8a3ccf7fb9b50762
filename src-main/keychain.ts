import type { SecretName } from './desktop-api';

export const KEYCHAIN_SERVICE = 'agent-workflow-service';

/**
 * Secrets in the operating system's keychain. keytar is the one binding used today; it sits behind
 * this small interface so it can be swapped for a maintained one without touching callers.
 */
export interface Keychain {
  readonly available: boolean;
  readonly reason: string | null;
  get(name: SecretName): Promise<string | null>;
  set(name: SecretName, value: string): Promise<void>;
  delete(name: SecretName): Promise<void>;
}

type Keytar = {
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

/** Opens the keychain, or says why there is none (no binding, no Secret Service running). */
export async function openKeychain(service = KEYCHAIN_SERVICE, load: () => Promise<Keytar> = async () => (await import('keytar')).default as Keytar): Promise<Keychain> {
  let keytar: Keytar;
  try {
    keytar = await load();
    // A probe read: fails when the binding loads but no Secret Service answers.
    await keytar.getPassword(service, '__probe__');
  } catch (error) {
    return unavailable(error instanceof Error ? error.message : String(error));
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
