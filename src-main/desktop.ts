import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { loadConfig, type Config } from '../src-server/config';
import type { BackupDone, BackupOptions, RestoreDone, RestoreOptions, RunningServer } from '../src-server/main';
import type {
  AppInfo,
  DesktopApi,
  DesktopNotification,
  DesktopSettings,
  NotificationOutcome,
  SecretName,
} from './desktop-api';
import { SECRET_NAMES } from './desktop-api';
import { assertSecretName, toNotification } from './guards';
import type { Keychain } from './keychain';
import { mcpClient, replaceMcpToken } from './mcp-client';
import { choosePort } from './ports';
import { readSettings, resolveServerEnv, usableSettings, withPassword, writeSettings } from './settings';
import { errorMessage } from '../src-server/contracts/errors';

export interface DesktopDeps {
  userDataDir: string;
  version: string;
  env: Record<string, string | undefined>;
  keychain: Keychain;
  startServer(options: {
    config: ReturnType<typeof loadConfig>;
    generatedDir?: string;
    desktop?: boolean;
  }): Promise<RunningServer>;
  generatedDir?: string;
  /** Shows a system notification (Electron's); without it, notifications are not shown and resolve 'closed'. */
  showNotification?(notification: DesktopNotification): Promise<NotificationOutcome>;
  /**
   * The server's backup() and restore() (src-server/main.ts), handed in so that tests give their own; with the
   * dialogs below, what Settings → Backup needs (without them, it refuses).
   */
  backup?(options: BackupOptions): Promise<BackupDone>;
  restore?(options: RestoreOptions): Promise<RestoreDone>;
  /** Asks where to write a backup (a native save dialog); null when the person cancelled. */
  chooseBackupTarget?(): Promise<string | null>;
  /** Asks which backup to restore, an archive or a folder (a native open dialog); null when the person cancelled. */
  chooseBackupSource?(): Promise<string | null>;
}

const escapeHtml = (text: string) => text.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!);

/**
 * A page for the window when the server cannot start: the reason and what to do, never a blank window. The studio's
 * settings are served by that server, so the page names the settings file, which can be corrected without it.
 */
export function errorPage(message: string, settingsFile: string): string {
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>Agent workflow service</title></head>
<body style="font-family:system-ui;max-width:640px;margin:60px auto;line-height:1.5">
<h1>The service could not start</h1><pre style="white-space:pre-wrap;background:#fef2f2;padding:12px;border-radius:8px">${escapeHtml(message)}</pre>
<p>Check the database settings (an embedded database needs a free port and a writable data folder; a remote one must be
reachable), then restart the app. The settings are in <code>${escapeHtml(settingsFile)}</code>: correct them there, or
remove that file to start with the defaults (an embedded database). Logs are in the app's data folder.</p></body></html>`;
  return `data:text/html;charset=utf-8,${encodeURIComponent(html)}`;
}

/**
 * The desktop app's logic without Electron: it runs the same startServer() as the headless mode, with
 * its data under the app's user-data folder, and answers the studio's settings calls.
 */
export function createDesktop(deps: DesktopDeps) {
  const settingsFile = path.join(deps.userDataDir, 'settings.json');
  let server: RunningServer | undefined;
  /** The configuration the server was last started with: its DATA_DIR and DATABASE_URL are what a backup copies. */
  let config: Config | undefined;
  /** A backup or a restore under way: one at a time. */
  let backupWork: 'backup' | 'restore' | null = null;
  let apiToken: string | null = null;
  let serverError: string | null = null;
  let settingsProblems: string[] = [];

  async function start(): Promise<{ url: string } | { error: string }> {
    try {
      const { settings, problems } = usableSettings(await readSettings(settingsFile));
      settingsProblems = problems;
      const token = randomBytes(24).toString('base64url');
      const env = await resolveServerEnv({
        env: deps.env,
        keychain: deps.keychain,
        settings,
        userDataDir: deps.userDataDir,
        port: await choosePort(8000),
        apiToken: token,
      });
      config = loadConfig(env);
      server = await deps.startServer({ config, generatedDir: deps.generatedDir, desktop: true });
      apiToken = env.SVC_API_TOKEN ?? token;
      serverError = null;
      return { url: `${server.url}/ui#token=${encodeURIComponent(apiToken)}` };
    } catch (error) {
      serverError = errorMessage(error);
      server = undefined;
      return { error: serverError };
    }
  }

  async function stop(): Promise<void> {
    const running = server;
    server = undefined;
    await running?.close();
  }

  const info = (): AppInfo => ({
    version: deps.version,
    apiUrl: server?.url ?? null,
    apiToken: server ? apiToken : null,
    serverError,
    settingsProblems,
    keychain: { available: deps.keychain.available, reason: deps.keychain.reason },
  });

  /** The configuration a backup or a restore acts on, and the claim that no other one runs meanwhile. */
  function beginBackupWork(work: 'backup' | 'restore'): Config {
    if (backupWork) throw new Error(`a ${backupWork} is under way: wait until it is done`);
    if (!config) throw new Error('the server has not been started: where its data is is not known yet');
    backupWork = work;
    return config;
  }

  const api: DesktopApi = {
    getSettings: () => readSettings(settingsFile),
    setSettings: (settings: DesktopSettings) => writeSettings(settingsFile, settings),
    async secretStatus() {
      const entries = await Promise.all(
        SECRET_NAMES.map(async (name) => [name, Boolean(await deps.keychain.get(name))] as const),
      );
      return Object.fromEntries(entries) as Record<SecretName, boolean>;
    },
    async setSecret(name, value) {
      assertSecretName(name);
      if (typeof value !== 'string') throw new Error(`the value of ${name} must be text`);
      await deps.keychain.set(name, value);
    },
    async deleteSecret(name) {
      assertSecretName(name);
      await deps.keychain.delete(name);
    },
    appInfo: async () => info(),
    async testDatabase(url, password) {
      const client = new pg.Client({ connectionString: withPassword(url, password), connectionTimeoutMillis: 5000 });
      try {
        await client.connect();
        await client.query('SELECT 1');
        return { ok: true, error: null };
      } catch (error) {
        return { ok: false, error: errorMessage(error) };
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    async restartServer() {
      await stop();
      await start();
      return info();
    },
    async showNotification(notification) {
      const checked = toNotification(notification);
      return deps.showNotification ? deps.showNotification(checked) : 'closed';
    },
    /** A backup of the running server's database: the embedded one is copied online, a remote one dumped. */
    async backup() {
      const { backup, chooseBackupTarget } = deps;
      if (!backup || !chooseBackupTarget) throw new Error('this app was started without a way to back up');
      const used = beginBackupWork('backup');
      try {
        const target = await chooseBackupTarget();
        if (target === null) return null;
        const done = await backup({
          dataDir: used.DATA_DIR,
          databaseUrl: used.DATABASE_URL,
          pgBinDir: deps.env.PG_BIN_DIR || undefined,
          target,
        });
        return { path: done.path };
      } finally {
        backupWork = null;
      }
    },
    /**
     * Restores a backup over this app's data with the server stopped (a restore never runs under it), then starts
     * the server again, also when the restore failed: the app is never left without its server. The embedded
     * database that was there is moved aside in DATA_DIR, never deleted (the restore's `force`); a remote database is
     * restored into only when it is empty, never replaced from here (a team's database is not the app's to drop).
     */
    async restore() {
      const { restore, chooseBackupSource } = deps;
      if (!restore || !chooseBackupSource) throw new Error('this app was started without a way to restore');
      const used = beginBackupWork('restore');
      try {
        const source = await chooseBackupSource();
        if (source === null) return null;
        let failure: { error: unknown } | undefined;
        try {
          await stop();
          await restore({
            dataDir: used.DATA_DIR,
            databaseUrl: used.DATABASE_URL,
            pgBinDir: deps.env.PG_BIN_DIR || undefined,
            source,
            force: !used.DATABASE_URL,
            secretsKeySet: Boolean(used.SECRETS_KEY),
          });
        } catch (error) {
          failure = { error };
        }
        await start();
        if (failure) throw failure.error;
        return info();
      } finally {
        backupWork = null;
      }
    },
    mcpClient: () => mcpClient(server?.url ?? null, deps.keychain),
    async newMcpToken() {
      if (!server || !apiToken) throw new Error('the server is not running: a token is made through it');
      await replaceMcpToken({ serverUrl: server.url, apiToken, keychain: deps.keychain });
      return mcpClient(server.url, deps.keychain);
    },
  };

  /** The origin the window's studio is served from, the only one trusted with IPC; null while no server runs. */
  const studioOrigin = (): string | null => (server ? new URL(server.url).origin : null);

  /**
   * What the window shows: the studio with its token, or, when the server could not start (at launch or at a
   * restart), the page that says why; a studio left on a stopped server could neither call it nor change a setting.
   */
  const windowUrl = (): string =>
    server && apiToken
      ? `${server.url}/ui#token=${encodeURIComponent(apiToken)}`
      : errorPage(serverError ?? 'the server is not running', settingsFile);

  return { start, stop, api, info, studioOrigin, windowUrl };
}

export type Desktop = ReturnType<typeof createDesktop>;
