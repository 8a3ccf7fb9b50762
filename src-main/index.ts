import { readFileSync } from 'node:fs';
import path from 'node:path';
import { app, BrowserWindow, ipcMain, Notification, shell } from 'electron';
import type { DesktopNotification, NotificationOutcome } from './desktop-api';
import { startServer } from '../src-server/main';
import { createDesktop } from './desktop';
import { guardWindow } from './guards';
import { openKeychain } from './keychain';
import { registerIpc } from './ipc';

/** Electron's side only: one instance, one window on the studio, the server stopped on quit. */
if (!app.requestSingleInstanceLock()) app.quit();

const version = (JSON.parse(readFileSync(path.join(app.getAppPath(), 'package.json'), 'utf8')) as { version: string })
  .version;
let window: BrowserWindow | null = null;

function createWindow(studioOrigin: () => string | null): BrowserWindow {
  const win = new BrowserWindow({
    width: 1400,
    height: 900,
    title: 'Agent workflow studio',
    webPreferences: {
      preload: path.join(import.meta.dirname, '../preload/index.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
    },
  });
  // The window shows the studio only: other sites open in the browser, never inside the app.
  guardWindow(win.webContents, studioOrigin, (url) => shell.openExternal(url));
  return win;
}

/** Notifications on screen, kept referenced until they end so their click still reaches the app. */
const shown = new Set<Notification>();

/** A system notification; a click brings the window forward and tells the studio, which opens what it is about. */
function showNotification({ title, body }: DesktopNotification): Promise<NotificationOutcome> {
  if (!Notification.isSupported()) return Promise.resolve('closed');
  return new Promise((resolve) => {
    const notification = new Notification({ title, body });
    shown.add(notification);
    const end = (outcome: NotificationOutcome) => {
      shown.delete(notification);
      resolve(outcome);
    };
    notification.on('click', () => {
      if (window?.isMinimized()) window.restore();
      window?.show();
      window?.focus();
      end('clicked');
    });
    notification.on('close', () => end('closed'));
    notification.show();
  });
}

app.on('second-instance', () => {
  if (window?.isMinimized()) window.restore();
  window?.focus();
});

void app.whenReady().then(async () => {
  const desktop = createDesktop({
    userDataDir: app.getPath('userData'),
    version,
    env: process.env,
    keychain: await openKeychain(),
    startServer,
    showNotification,
    generatedDir: app.isPackaged ? path.join(process.resourcesPath, 'generated') : undefined,
  });
  registerIpc(
    ipcMain,
    {
      'settings:get': desktop.api.getSettings,
      'settings:set': desktop.api.setSettings,
      'secrets:status': desktop.api.secretStatus,
      'secrets:set': desktop.api.setSecret,
      'secrets:delete': desktop.api.deleteSecret,
      'app:info': desktop.api.appInfo,
      'database:test': desktop.api.testDatabase,
      'notification:show': desktop.api.showNotification,
      'mcp:get': desktop.api.mcpClient,
      'mcp:new-token': desktop.api.newMcpToken,
      'server:restart': async () => {
        const info = await desktop.api.restartServer();
        await window?.loadURL(desktop.windowUrl());
        return info;
      },
    },
    desktop.studioOrigin,
  );

  window = createWindow(desktop.studioOrigin);
  await desktop.start();
  await window.loadURL(desktop.windowUrl());

  let quitting = false;
  app.on('before-quit', (event) => {
    if (quitting) return;
    event.preventDefault();
    quitting = true;
    void desktop.stop().finally(() => app.quit());
  });
});

app.on('window-all-closed', () => app.quit());
