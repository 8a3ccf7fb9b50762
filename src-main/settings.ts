import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { SECRETS_KEY_SECRET, type DesktopSettings, type SecretName } from './desktop-api';
import type { Keychain } from './keychain';

export const DEFAULT_SETTINGS: DesktopSettings = { database: { mode: 'embedded' }, localLlmBase: null };

/**
 * The settings as saved, even values that cannot be used (the studio shows them, so that they can be corrected):
 * `usableSettings()` tells those apart. Settings hold no secret: a remote database URL is stored without its
 * password (that is in the keychain).
 */
export async function readSettings(file: string): Promise<DesktopSettings> {
  try {
    const saved: unknown = JSON.parse(await fs.readFile(file, 'utf8'));
    return saved && typeof saved === 'object' ? { ...DEFAULT_SETTINGS, ...saved } : DEFAULT_SETTINGS;
  } catch {
    return DEFAULT_SETTINGS;
  }
}

const hasProtocol = (url: unknown, protocols: string[]): boolean => {
  try {
    return typeof url === 'string' && protocols.includes(new URL(url.trim()).protocol);
  } catch {
    return false;
  }
};

/**
 * The settings the server can start with, and what is wrong with the others: each value that cannot work is
 * replaced by its default and named in `problems`. A value saved by hand or by an older version must not keep the
 * server from starting, since the studio that corrects it is served by that server. The rules are narrower than
 * the server's own (any URL): the runtime speaks HTTP and the database PostgreSQL, whatever a URL could name.
 */
export function usableSettings(settings: DesktopSettings): { settings: DesktopSettings; problems: string[] } {
  const problems: string[] = [];
  let { database, localLlmBase } = settings;
  if (typeof localLlmBase === 'string') localLlmBase = localLlmBase.trim() || null;
  if (localLlmBase !== null && !hasProtocol(localLlmBase, ['http:', 'https:'])) {
    problems.push('the local model runtime address must be an http:// or https:// URL, such as http://127.0.0.1:11434');
    localLlmBase = null;
  }
  const remote = database?.mode === 'remote' && hasProtocol(database.url, ['postgres:', 'postgresql:']);
  if (database?.mode !== 'embedded' && !remote) {
    problems.push(
      'the database must be embedded, or remote with a postgresql:// URL such as postgresql://user@host:5432/database',
    );
    database = DEFAULT_SETTINGS.database;
  }
  return { settings: { database, localLlmBase }, problems };
}

/** Saves settings that the server can start with; anything else is refused with what is wrong, and not saved. */
export async function writeSettings(file: string, settings: DesktopSettings): Promise<DesktopSettings> {
  const { settings: usable, problems } = usableSettings(settings);
  if (problems.length > 0) throw new Error(problems.join('; '));
  const clean: DesktopSettings = {
    localLlmBase: usable.localLlmBase,
    database:
      usable.database.mode === 'remote'
        ? { mode: 'remote', url: withoutPassword(usable.database.url) }
        : { mode: 'embedded' },
  };
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, `${JSON.stringify(clean, null, 2)}\n`, { mode: 0o600 });
  return clean;
}

export function withoutPassword(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return parsed.toString();
}

export function withPassword(url: string, password: string | null): string {
  if (!password) return url;
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.toString();
}

const SECRET_VARIABLES: Exclude<SecretName, 'DATABASE_PASSWORD'>[] = [
  'CLOUD_A_API_KEY',
  'CLOUD_B_API_KEY',
  'CLOUD_C_API_KEY',
  'SESSION_SECRET',
  'OIDC_CLIENT_SECRET',
];

/**
 * The key of the server's kept secrets, made once (32 random bytes, base64) and kept in the keychain; undefined when
 * the keychain does not take it (the server then keeps a key in its data folder).
 */
async function secretsKey(keychain: Keychain): Promise<string | undefined> {
  const kept = await keychain.get(SECRETS_KEY_SECRET);
  if (kept) return kept;
  const made = randomBytes(32).toString('base64');
  return keychain.set(SECRETS_KEY_SECRET, made).then(
    () => made,
    () => undefined,
  );
}

/**
 * The server's environment in the desktop app: the process environment wins, then the keychain,
 * then the settings file, then the app's defaults (embedded database under userData, per-launch token).
 */
export async function resolveServerEnv(options: {
  env: Record<string, string | undefined>;
  keychain: Keychain;
  settings: DesktopSettings;
  userDataDir: string;
  port: number;
  apiToken: string;
}): Promise<Record<string, string>> {
  const { env, keychain, settings } = options;
  const resolved: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: String(options.port),
    DATA_DIR: path.join(options.userDataDir, 'data'),
    AUTH_ENABLED: 'true',
    SVC_API_TOKEN: options.apiToken,
  };
  if (settings.localLlmBase) resolved.LOCAL_LLM_BASE = settings.localLlmBase;
  if (settings.database.mode === 'remote')
    resolved.DATABASE_URL = withPassword(settings.database.url, await keychain.get('DATABASE_PASSWORD'));
  for (const name of SECRET_VARIABLES) {
    const value = await keychain.get(name);
    if (value) resolved[name] = value;
  }
  const key = keychain.available ? await secretsKey(keychain) : undefined;
  if (key) resolved.SECRETS_KEY = key;
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') resolved[key] = value;
  return resolved;
}
