import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningServer } from '../src-server/main';
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
  it('reports a server that cannot start, with a page that says why', async () => {
    const desktop = createDesktop({
      userDataDir: await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-')),
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
    expect(decodeURIComponent(errorPage('port <54329> taken'))).toContain('port &lt;54329&gt; taken');
  });

  it('starts the same startServer() with its data under user data, opens the studio with the token, and stops it', async () => {
    const userDataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-desktop-'));
    let closed = false;
    let seenDataDir = '';
    const desktop = createDesktop({
      userDataDir,
      version: '1.2.3',
      env: {},
      keychain: noKeychain,
      startServer: async ({ config }) => {
        seenDataDir = config.DATA_DIR;
        return {
          url: `http://127.0.0.1:${config.PORT}`,
          close: async () => void (closed = true),
        } as unknown as RunningServer;
      },
    });
    const started = await desktop.start();
    expect('url' in started && started.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ui#token=[\w-]{24,}$/);
    expect(seenDataDir).toBe(path.join(userDataDir, 'data'));
    expect(desktop.info().apiToken).toMatch(/^[\w-]{24,}$/);
    await desktop.stop();
    expect(closed).toBe(true);
  });
});
