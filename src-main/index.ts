import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  app,
  BrowserWindow,
  dialog,
  ipcMain,
  Notification,
  shell,
  type MessageBoxOptions,
  type OpenDialogOptions,
  type SaveDialogOptions,
} from 'electron';
import type { DesktopNotification, NotificationOutcome } from './desktop-api';
import { backup, restore, startServer } from '../src-server/main';
import { errorMessage } from '../src-server/contracts/errors';
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

/** A backup written from the app is always an archive: backup() makes a folder of a name without .tar.gz. */
const ARCHIVE = /\.(tar\.gz|tgz)$/i;
/**
 * The filter of backup archives. macOS's panels take the last part of a name as its extension (a filter of "tar.gz"
 * greys out every .tar.gz), so the filter is "gz": restore() refuses what is not a backup anyway.
 */
const ARCHIVE_FILTERS = [
  { name: 'Backup archives (.tar.gz)', extensions: ['gz', 'tgz'] },
  { name: 'All files', extensions: ['*'] },
];

const saveDialog = (options: SaveDialogOptions) =>
  window ? dialog.showSaveDialog(window, options) : dialog.showSaveDialog(options);
const openDialog = (options: OpenDialogOptions) =>
  window ? dialog.showOpenDialog(window, options) : dialog.showOpenDialog(options);
const messageBox = (options: MessageBoxOptions) =>
  window ? dialog.showMessageBox(window, options) : dialog.showMessageBox(options);

/** Where to write a backup: a new archive, named after today by default. */
async function chooseBackupTarget(): Promise<string | null> {
  const { canceled, filePath } = await saveDialog({
    title: 'Back up the app’s data',
    defaultPath: `agent-workflow-${new Date().toISOString().slice(0, 10)}.tar.gz`,
    buttonLabel: 'Back up',
    filters: ARCHIVE_FILTERS,
    properties: ['createDirectory', 'showOverwriteConfirmation'],
  });
  if (canceled || !filePath) return null;
  return ARCHIVE.test(filePath) ? filePath : `${filePath}.tar.gz`;
}

/**
 * Which backup to restore: an archive or a folder (`npm run backup` writes either). macOS's panel can offer both at
 * once; on Windows and Linux an open dialog is a file or a folder chooser, so the person says which first.
 */
async function chooseBackupSource(): Promise<string | null> {
  const title = 'Restore a backup';
  let kind: 'archive' | 'folder' | 'either' = 'either';
  if (process.platform !== 'darwin') {
    const { response } = await messageBox({
      type: 'question',
      title,
      message: 'Is the backup an archive or a folder?',
      detail: 'The app writes archives (.tar.gz); npm run backup can also write a backup as a folder.',
      buttons: ['An archive (.tar.gz)…', 'A folder…', 'Cancel'],
      defaultId: 0,
      cancelId: 2,
      noLink: true,
    });
    if (response === 2) return null;
    kind = response === 0 ? 'archive' : 'folder';
  }
  const { canceled, filePaths } = await openDialog({
    title,
    buttonLabel: 'Restore',
    filters: kind === 'folder' ? undefined : ARCHIVE_FILTERS,
    properties:
      kind === 'archive' ? ['openFile'] : kind === 'folder' ? ['openDirectory'] : ['openFile', 'openDirectory'],
  });
  return canceled || !filePaths[0] ? null : filePaths[0];
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
    backup,
    restore,
    chooseBackupTarget,
    chooseBackupSource,
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
      'backup:create': desktop.api.backup,
      // A restore restarts the server (with a new token, maybe on a new port): the window is reloaded on it, which
      // ends the studio page that asked, so the outcome is said in a message box over the reloaded window.
      'backup:restore': async () => {
        const before = desktop.windowUrl();
        const told = (options: Omit<MessageBoxOptions, 'title'>) =>
          void messageBox({ title: 'Restore a backup', ...options }).catch(() => undefined);
        try {
          const info = await desktop.api.restore();
          if (!info) return null;
          await window?.loadURL(desktop.windowUrl());
          told({
            type: info.serverError ? 'warning' : 'info',
            message: 'The backup was restored.',
            detail: info.serverError
              ? `The server did not start on it: ${info.serverError}`
              : 'A database the app had before is kept in its data folder, in a before-restore-… folder: remove that folder when you no longer need it.',
          });
          return info;
        } catch (error) {
          // Refused before the server stopped (another backup under way): the studio that asked shows why.
          if (desktop.windowUrl() === before) throw error;
          await window?.loadURL(desktop.windowUrl());
          told({ type: 'error', message: 'The backup was not restored.', detail: errorMessage(error) });
          throw error;
        }
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
