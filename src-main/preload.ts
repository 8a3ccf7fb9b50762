import { contextBridge, ipcRenderer } from 'electron';
import type { DesktopApi } from './desktop-api';

/**
 * Runs sandboxed with context isolation: the studio gets `window.desktop`, a typed function per
 * allow-listed channel, and no other way to reach the main process.
 */
const desktop: DesktopApi = {
  getSettings: () => ipcRenderer.invoke('settings:get'),
  setSettings: (settings) => ipcRenderer.invoke('settings:set', settings),
  secretStatus: () => ipcRenderer.invoke('secrets:status'),
  setSecret: (name, value) => ipcRenderer.invoke('secrets:set', name, value),
  deleteSecret: (name) => ipcRenderer.invoke('secrets:delete', name),
  appInfo: () => ipcRenderer.invoke('app:info'),
  testDatabase: (url, password) => ipcRenderer.invoke('database:test', url, password),
  restartServer: () => ipcRenderer.invoke('server:restart'),
  showNotification: (notification) => ipcRenderer.invoke('notification:show', notification),
  mcpClient: () => ipcRenderer.invoke('mcp:get'),
  newMcpToken: () => ipcRenderer.invoke('mcp:new-token'),
  backup: () => ipcRenderer.invoke('backup:create'),
  restore: () => ipcRenderer.invoke('backup:restore'),
};

contextBridge.exposeInMainWorld('desktop', desktop);
