import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Config } from '../src-server/config';
import type { BackupOptions, RestoreDone, RestoreOptions, RunningServer } from '../src-server/main';
import { createDesktop, errorPage } from './desktop';
import type { Keychain } from './keychain';

const noKeychain: Keychain = {
  available: false,
  reason: 'no Secret Service',
  get: async () => null,
  set: async () => undefined,
  delete: async () => undefined,
};

describe('the desktop server lifecycle', () => {
  it('reports a server that cannot start, with a page that says why and where the settings are', async () => {
    const userDataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-'));
    const desktop = createDesktop({
      userDataDir,
      version: '1.2.3',
      env: {},
      keychain: noKeychain,
      startServer: async () => {
        throw new Error('embedded PostgreSQL could not start on port 54329');
      },
    });
    const started = await desktop.start();
    expect(started).toEqual({ error: 'embedded PostgreSQL could not start on port 54329' });
    expect(desktop.info()).toMatchObject({
      apiUrl: null,
      serverError: 'embedded PostgreSQL could not start on port 54329',
      keychain: { available: false },
    });
    const page = decodeURIComponent(desktop.windowUrl());
    expect(page).toMatch(/^data:text\/html/);
    expect(page).toContain('embedded PostgreSQL could not start on port 54329');
    expect(page).toContain(`<code>${path.join(userDataDir, 'settings.json')}</code>`);
    expect(decodeURIComponent(errorPage('port <54329> taken', '/x'))).toContain('port &lt;54329&gt; taken');
  });

  it('starts the same startServer() with its data under user data, opens the studio with the token, and stops it', async () => {
    const userDataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-'));
    let closed = false;
    let seenDataDir = '';
    let seenDesktop: boolean | undefined;
    const desktop = createDesktop({
      userDataDir,
      version: '1.2.3',
      env: {},
      keychain: noKeychain,
      startServer: async ({ config, desktop }) => {
        seenDataDir = config.DATA_DIR;
        seenDesktop = desktop;
        return {
          url: `http://127.0.0.1:${config.PORT}`,
          close: async () => void (closed = true),
        } as unknown as RunningServer;
      },
    });
    const started = await desktop.start();
    expect('url' in started && started.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ui#token=[\w-]{24,}$/);
    expect(desktop.windowUrl()).toBe('url' in started && started.url);
    expect(seenDataDir).toBe(path.join(userDataDir, 'data'));
    // The desktop's token is per launch, though it arrives as SVC_API_TOKEN: its one user runs stdio MCP servers.
    expect(seenDesktop).toBe(true);
    expect(desktop.info().apiToken).toMatch(/^[\w-]{24,}$/);
    // The window's studio is the one origin trusted with IPC, and only while the server runs.
    expect(desktop.studioOrigin()).toBe(new URL(desktop.info().apiUrl!).origin);
    await desktop.stop();
    expect(closed).toBe(true);
    expect(desktop.studioOrigin()).toBeNull();
  });
});

describe('settings that the server cannot use', () => {
  /** A desktop whose startServer stands in for the real one and keeps the configurations it was given. */
  async function desktopWithSettings(saved: unknown) {
    const userDataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-'));
    const settingsFile = path.join(userDataDir, 'settings.json');
    await fs.writeFile(settingsFile, JSON.stringify(saved));
    const configs: Config[] = [];
    const desktop = createDesktop({
      userDataDir,
      version: '1.2.3',
      env: {},
      keychain: noKeychain,
      startServer: async ({ config }) => {
        configs.push(config);
        return { url: `http://127.0.0.1:${config.PORT}`, close: async () => undefined } as unknown as RunningServer;
      },
    });
    return { desktop, settingsFile, configs };
  }

  it('a runtime address saved without its scheme: the server starts with the default, the studio says why, and the person corrects it', async () => {
    const { desktop, settingsFile, configs } = await desktopWithSettings({
      database: { mode: 'embedded' },
      localLlmBase: '192.168.1.5:11434',
    });
    expect(await desktop.start()).toMatchObject({ url: expect.stringContaining('/ui#token=') });
    expect(configs[0]!.LOCAL_LLM_BASE).toBe('http://127.0.0.1:11434');
    // The studio, and with it the settings, is reachable; it shows the saved value and what is wrong with it.
    expect(desktop.studioOrigin()).not.toBeNull();
    expect(desktop.info()).toMatchObject({
      serverError: null,
      settingsProblems: [
        'the local model runtime address must be an http:// or https:// URL, such as http://127.0.0.1:11434',
      ],
    });
    expect((await desktop.api.getSettings()).localLlmBase).toBe('192.168.1.5:11434');

    // The same mistake is not saved again, and what was saved is left alone.
    const saved = await fs.readFile(settingsFile, 'utf8');
    for (const wrong of ['192.168.1.5:11434', 'localhost:11434', 'ftp://gpu-box/', 'http://gpu box:11434']) {
      await expect(
        desktop.api.setSettings({ database: { mode: 'embedded' }, localLlmBase: wrong }),
        wrong,
      ).rejects.toThrow(
        'the local model runtime address must be an http:// or https:// URL, such as http://127.0.0.1:11434',
      );
    }
    expect(await fs.readFile(settingsFile, 'utf8')).toBe(saved);

    await desktop.api.setSettings({ database: { mode: 'embedded' }, localLlmBase: 'http://192.168.1.5:11434' });
    const info = await desktop.api.restartServer();
    expect(configs[1]!.LOCAL_LLM_BASE).toBe('http://192.168.1.5:11434');
    expect(info).toMatchObject({ serverError: null, settingsProblems: [] });
  });

  it('a remote database URL saved wrong: the server starts on the embedded database and says why', async () => {
    const { desktop, configs } = await desktopWithSettings({
      database: { mode: 'remote', url: 'db.example:5432/svc' },
      localLlmBase: null,
    });
    expect(await desktop.start()).toMatchObject({ url: expect.any(String) });
    expect(configs[0]!.DATABASE_URL).toBeUndefined();
    expect(desktop.info().settingsProblems).toEqual([
      'the database must be embedded, or remote with a postgresql:// URL such as postgresql://user@host:5432/database',
    ]);
    await expect(
      desktop.api.setSettings({ database: { mode: 'remote', url: 'http://db.example/svc' }, localLlmBase: null }),
    ).rejects.toThrow('the database must be embedded, or remote with a postgresql:// URL');
  });
});

describe('the desktop notifications', () => {
  it("shows the renderer's notification, checked, through the app's notifier, and tells how it ended", async () => {
    const shown: unknown[] = [];
    const desktop = createDesktop({
      userDataDir: await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-')),
      version: '1.2.3',
      env: {},
      keychain: noKeychain,
      startServer: async () => {
        throw new Error('not needed');
      },
      showNotification: async (notification) => {
        shown.push(notification);
        return 'clicked';
      },
    });
    const untyped = desktop.api as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    expect(await untyped.showNotification!({ title: 'Approval waiting', body: 'Ship it?', icon: 'file:///x' })).toBe(
      'clicked',
    );
    await expect(untyped.showNotification!({ title: ['x'], body: '' })).rejects.toThrow('a notification is');
    expect(shown).toEqual([{ title: 'Approval waiting', body: 'Ship it?' }]);
  });
});

describe('the desktop secrets', () => {
  it('stores only allow-listed secret names, whatever the renderer sends', async () => {
    const stored = new Map<string, string>();
    const keychain: Keychain = {
      available: true,
      reason: null,
      get: async (name) => stored.get(name) ?? null,
      set: async (name, value) => void stored.set(name, value),
      delete: async (name) => void stored.delete(name),
    };
    const desktop = createDesktop({
      userDataDir: await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-')),
      version: '1.2.3',
      env: {},
      keychain,
      startServer: async () => {
        throw new Error('not needed');
      },
    });
    await desktop.api.setSecret('CLOUD_B_API_KEY', 'sk-b');
    expect((await desktop.api.secretStatus()).CLOUD_B_API_KEY).toBe(true);

    // What a page could send through the bridge despite its types.
    const untyped = desktop.api as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    await expect(untyped.setSecret!('PATH', '/tmp/evil')).rejects.toThrow('"PATH" is not a secret the app stores');
    await expect(untyped.setSecret!('SESSION_SECRET', { toString: () => 'x' })).rejects.toThrow(
      'the value of SESSION_SECRET must be text',
    );
    await expect(untyped.deleteSecret!('keytar-probe')).rejects.toThrow('is not a secret the app stores');
    expect([...stored.keys()]).toEqual(['CLOUD_B_API_KEY']);

    await desktop.api.deleteSecret('CLOUD_B_API_KEY');
    expect(stored.size).toBe(0);
  });
});

describe('backups from the desktop app', () => {
  /** A desktop whose server, backup, restore and dialogs stand in for the real ones, and which records their calls. */
  async function desktopWithBackups(options: {
    target?: string | null;
    source?: string | null;
    restore?: (options: RestoreOptions) => Promise<RestoreDone>;
    env?: Record<string, string | undefined>;
  }) {
    const userDataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-'));
    const events: string[] = [];
    const backups: BackupOptions[] = [];
    const restores: RestoreOptions[] = [];
    let starts = 0;
    const desktop = createDesktop({
      userDataDir,
      version: '1.2.3',
      env: options.env ?? {},
      keychain: noKeychain,
      startServer: async ({ config }) => {
        starts += 1;
        events.push(`start ${starts}`);
        return {
          url: `http://127.0.0.1:${config.PORT}`,
          close: async () => void events.push(`stop ${starts}`),
        } as unknown as RunningServer;
      },
      backup: async (given) => {
        events.push('backup');
        backups.push(given);
        return { path: path.resolve(given.target), manifest: {} as never };
      },
      restore: async (given) => {
        events.push('restore');
        restores.push(given);
        return options.restore ? options.restore(given) : { manifest: {} as never, setAside: '/x/before-restore' };
      },
      chooseBackupTarget: async () => {
        events.push('choose target');
        return options.target === undefined ? '/backups/agents.tar.gz' : options.target;
      },
      chooseBackupSource: async () => {
        events.push('choose source');
        return options.source === undefined ? '/backups/agents.tar.gz' : options.source;
      },
    });
    return { desktop, userDataDir, events, backups, restores };
  }

  it("backs up the running server's database where the person chose, while it runs, and answers the path", async () => {
    const { desktop, userDataDir, events, backups } = await desktopWithBackups({});
    await desktop.start();
    expect(await desktop.api.backup()).toEqual({ path: '/backups/agents.tar.gz' });
    expect(backups).toEqual([
      { dataDir: path.join(userDataDir, 'data'), databaseUrl: undefined, target: '/backups/agents.tar.gz' },
    ]);
    // Online: the server is neither stopped nor started again.
    expect(events).toEqual(['start 1', 'choose target', 'backup']);
    expect(desktop.info().apiUrl).not.toBeNull();
  });

  it('backs up the remote database the server uses, with the PostgreSQL tools of PG_BIN_DIR', async () => {
    const { desktop, backups } = await desktopWithBackups({
      env: { DATABASE_URL: 'postgresql://svc@db.example:5432/agents', PG_BIN_DIR: '/usr/lib/postgresql/16/bin' },
    });
    await desktop.start();
    await desktop.api.backup();
    expect(backups[0]).toMatchObject({
      databaseUrl: 'postgresql://svc@db.example:5432/agents',
      pgBinDir: '/usr/lib/postgresql/16/bin',
    });
  });

  it('a cancelled dialog answers null and does nothing', async () => {
    const { desktop, events } = await desktopWithBackups({ target: null, source: null });
    await desktop.start();
    expect(await desktop.api.backup()).toBeNull();
    expect(await desktop.api.restore()).toBeNull();
    expect(events).toEqual(['start 1', 'choose target', 'choose source']);
  });

  it('a failed backup reaches the caller with its reason, and the next one may run', async () => {
    const failing = createDesktop({
      userDataDir: await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-')),
      version: '1.2.3',
      env: {},
      keychain: noKeychain,
      startServer: async ({ config }) =>
        ({ url: `http://127.0.0.1:${config.PORT}`, close: async () => undefined }) as unknown as RunningServer,
      backup: async () => {
        throw new Error('/backups/agents.tar.gz exists already');
      },
      chooseBackupTarget: async () => '/backups/agents.tar.gz',
    });
    await failing.start();
    await expect(failing.api.backup()).rejects.toThrow('/backups/agents.tar.gz exists already');
    await expect(failing.api.backup()).rejects.toThrow('/backups/agents.tar.gz exists already');
  });

  it('refuses without the functions and dialogs of backups', async () => {
    const desktop = createDesktop({
      userDataDir: await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-')),
      version: '1.2.3',
      env: {},
      keychain: noKeychain,
      startServer: async ({ config }) =>
        ({ url: `http://127.0.0.1:${config.PORT}`, close: async () => undefined }) as unknown as RunningServer,
    });
    await desktop.start();
    await expect(desktop.api.backup()).rejects.toThrow('this app was started without a way to back up');
    await expect(desktop.api.restore()).rejects.toThrow('this app was started without a way to restore');
    expect(desktop.info().apiUrl).not.toBeNull();
  });

  it('refuses a backup before the server was ever started: where its data is is not known', async () => {
    const { desktop, events } = await desktopWithBackups({});
    await expect(desktop.api.backup()).rejects.toThrow('the server has not been started');
    expect(events).toEqual([]);
  });

  it('restores with the server stopped, with force (the current database is set aside), then starts it again', async () => {
    const { desktop, userDataDir, events, restores } = await desktopWithBackups({ source: '/backups/old.tar.gz' });
    await desktop.start();
    const before = desktop.info().apiToken;
    const info = await desktop.api.restore();
    expect(events).toEqual(['start 1', 'choose source', 'stop 1', 'restore', 'start 2']);
    expect(restores).toEqual([
      {
        dataDir: path.join(userDataDir, 'data'),
        databaseUrl: undefined,
        source: '/backups/old.tar.gz',
        force: true,
        secretsKeySet: false,
      },
    ]);
    // The app's state after the restart: a server runs, with a token of its own.
    expect(info).toMatchObject({ serverError: null, apiUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    expect(info!.apiToken).not.toBe(before);
  });

  it('tells the restore that the server seals with SECRETS_KEY when it is set', async () => {
    const { desktop, restores } = await desktopWithBackups({ env: { SECRETS_KEY: 'k'.repeat(44) } });
    await desktop.start();
    await desktop.api.restore();
    expect(restores[0]).toMatchObject({ secretsKeySet: true, force: true });
  });

  it('restores into a remote database only when it is empty: never with force, which would drop a team database', async () => {
    const { desktop, restores } = await desktopWithBackups({
      env: { DATABASE_URL: 'postgresql://svc@db.example:5432/agents' },
    });
    await desktop.start();
    await desktop.api.restore();
    expect(restores[0]).toMatchObject({ databaseUrl: 'postgresql://svc@db.example:5432/agents', force: false });
  });

  it('a failed restore still starts the server again, and its error reaches the caller', async () => {
    const refused = new Error('the backup is of PostgreSQL 16, and this installation runs 18');
    const { desktop, events } = await desktopWithBackups({
      restore: async () => {
        throw refused;
      },
    });
    await desktop.start();
    await expect(desktop.api.restore()).rejects.toBe(refused);
    expect(events).toEqual(['start 1', 'choose source', 'stop 1', 'restore', 'start 2']);
    expect(desktop.info()).toMatchObject({ serverError: null, apiUrl: expect.any(String) });
    expect(desktop.studioOrigin()).not.toBeNull();
  });

  it('one backup or restore at a time', async () => {
    let release!: () => void;
    const { desktop, events } = await desktopWithBackups({
      restore: () =>
        new Promise<RestoreDone>((resolve) => {
          release = () => resolve({ manifest: {} as never });
        }),
    });
    await desktop.start();
    const restoring = desktop.api.restore();
    await expect.poll(() => events.includes('restore')).toBe(true);
    await expect(desktop.api.backup()).rejects.toThrow('a restore is under way');
    await expect(desktop.api.restore()).rejects.toThrow('a restore is under way');
    release();
    await restoring;
    expect(await desktop.api.backup()).toEqual({ path: '/backups/agents.tar.gz' });
  });
});
