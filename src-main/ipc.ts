import { DESKTOP_CHANNELS, type DesktopChannel } from './desktop-api';

export function isAllowedChannel(channel: string): channel is DesktopChannel {
  return (DESKTOP_CHANNELS as readonly string[]).includes(channel);
}

/** The part of Electron's ipcMain this module uses, so tests can hand in their own. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: unknown, ...args: unknown[]) => unknown): void;
}

export type Handlers = { [C in DesktopChannel]: (...args: never[]) => unknown };

/** Registers exactly the allow-listed channels; anything else is refused before it reaches a handler. */
export function registerIpc(ipcMain: IpcMainLike, handlers: Record<string, (...args: never[]) => unknown>): void {
  for (const channel of Object.keys(handlers)) {
    if (!isAllowedChannel(channel)) throw new Error(`IPC channel "${channel}" is not on the allow-list`);
  }
  for (const channel of DESKTOP_CHANNELS) {
    const handler = handlers[channel];
    if (!handler) throw new Error(`IPC channel "${channel}" has no handler`);
    ipcMain.handle(channel, (_event, ...args) => (handler as (...a: unknown[]) => unknown)(...args));
  }
}
