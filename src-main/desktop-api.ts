/**
 * The only bridge between the studio and the desktop app: these channels, nothing else. The preload
 * exposes them as `window.desktop`; the main process answers only these.
 */
export const DESKTOP_CHANNELS = [
  'settings:get',
  'settings:set',
  'secrets:status',
  'secrets:set',
  'secrets:delete',
  'app:info',
  'database:test',
  'server:restart',
  'notification:show',
  'mcp:get',
  'mcp:new-token',
  'backup:create',
  'backup:restore',
] as const;
export type DesktopChannel = (typeof DESKTOP_CHANNELS)[number];

export const SECRET_NAMES = [
  'CLOUD_A_API_KEY',
  'CLOUD_B_API_KEY',
  'CLOUD_C_API_KEY',
  'SESSION_SECRET',
  'DATABASE_PASSWORD',
  'OIDC_CLIENT_SECRET',
] as const;
export type SecretName = (typeof SECRET_NAMES)[number];

/**
 * The personal access token the app made for MCP clients, with its id (to revoke it when it is replaced). Only the
 * app writes it; the studio reads it back through `mcpClient()` alone, to show the client configuration again.
 */
export const MCP_TOKEN_SECRET = 'MCP_CLIENT_TOKEN';
/**
 * The key that seals the secrets the server keeps (Slack's tokens): made by the app on first start and kept in the
 * keychain, so that it is not a file beside the database it protects. Without a keychain the server keeps it in its
 * data folder.
 */
export const SECRETS_KEY_SECRET = 'SECRETS_KEY';
/** Every name the app keeps in the keychain: those the studio sets, and those the app makes itself. */
export type StoredSecretName = SecretName | typeof MCP_TOKEN_SECRET | typeof SECRETS_KEY_SECRET;

export interface DesktopSettings {
  database: { mode: 'embedded' } | { mode: 'remote'; url: string };
  localLlmBase: string | null;
}

export interface AppInfo {
  version: string;
  /** Where the API listens, for scripts on this machine. */
  apiUrl: string | null;
  apiToken: string | null;
  serverError: string | null;
  /** Saved settings the server could not use at its last start (their defaults were used instead), one line each. */
  settingsProblems: string[];
  keychain: { available: boolean; reason: string | null };
}

/** How an MCP client reaches this app's server (Settings → MCP clients). */
export interface McpClient {
  /** The server's MCP endpoint, `<server url>/mcp`; null while no server runs. */
  url: string | null;
  /** The personal access token the app made for MCP clients and keeps in the keychain; null before the first. */
  token: string | null;
  /** A client configuration (JSON) with both, to copy; null without either. */
  config: string | null;
}

/** A system notification the studio raises (an approval is waiting): plain text only. */
export interface DesktopNotification {
  title: string;
  body: string;
}
/** How a notification ended: the person clicked it (the studio then shows what it is about), or it went away. */
export type NotificationOutcome = 'clicked' | 'closed';

export interface DesktopApi {
  getSettings(): Promise<DesktopSettings>;
  setSettings(settings: DesktopSettings): Promise<DesktopSettings>;
  /** Which secrets are stored; never their values. */
  secretStatus(): Promise<Record<SecretName, boolean>>;
  setSecret(name: SecretName, value: string): Promise<void>;
  deleteSecret(name: SecretName): Promise<void>;
  appInfo(): Promise<AppInfo>;
  testDatabase(url: string, password: string | null): Promise<{ ok: boolean; error: string | null }>;
  restartServer(): Promise<AppInfo>;
  /** Shows a system notification; resolves when it is clicked (the window is then brought forward) or closed. */
  showNotification(notification: DesktopNotification): Promise<NotificationOutcome>;
  mcpClient(): Promise<McpClient>;
  /**
   * Makes a personal access token for MCP clients (as the app's local user, through the server's API), keeps it in
   * the keychain, and revokes the one it replaces; clients configured with that one must be given the new one.
   */
  newMcpToken(): Promise<McpClient>;
  /**
   * Asks where to write a backup (a save dialog) and writes one there while the server runs: the database the server
   * uses (the embedded one copied online). Answers the path written, or null when the dialog was cancelled; a failure
   * is thrown with its reason.
   */
  backup(): Promise<{ path: string } | null>;
  /**
   * Asks which backup to restore (an archive or a folder), stops the server, restores it (the embedded database that
   * was there is moved aside in the data folder, never deleted) and starts the server again, also after a failed
   * restore, whose error is then thrown. Answers the app's state after the restart, or null when cancelled. The
   * window is reloaded on the restarted server.
   */
  restore(): Promise<AppInfo | null>;
}
