import fs from 'node:fs/promises';
import path from 'node:path';
import type { DesktopSettings, SecretName } from './desktop-api';
import type { Keychain } from './keychain';

export const DEFAULT_SETTINGS: DesktopSettings = { database: { mode: 'embedded' }, localLlmBase: null };

/** Settings hold no secret: a remote database URL is stored without its password (that is in the keychain). */
export async function readSettings(file: string): Promise<DesktopSettings> {
  try {
    const saved = JSON.parse(await fs.readFile(file, 'utf8')) as Partial<DesktopSettings>;
    return { ...DEFAULT_SETTINGS, ...saved };
  } catch {
    return DEFAULT_SETTINGS;
  }
}

export async function writeSettings(file: string, settings: DesktopSettings): Promise<DesktopSettings> {
  const clean: DesktopSettings = {
    localLlmBase: settings.localLlmBase?.trim() || null,
    database:
      settings.database.mode === 'remote'
        ? { mode: 'remote', url: withoutPassword(settings.database.url) }
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
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') resolved[key] = value;
  return resolved;
}
