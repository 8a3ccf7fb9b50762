import { DESKTOP_CHANNELS, type DesktopChannel } from './desktop-api';
import { isTrustedSender } from './guards';

export function isAllowedChannel(channel: string): channel is DesktopChannel {
  return (DESKTOP_CHANNELS as readonly string[]).includes(channel);
}

/** What a handler learns of the caller: the frame that sent the message (null once it navigated away or closed). */
export interface IpcEventLike {
  senderFrame?: { url: string } | null;
}

/** The part of Electron's ipcMain this module uses, so tests can hand in their own. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => unknown): void;
}

export type Handlers = { [C in DesktopChannel]: (...args: never[]) => unknown };

/**
 * Registers exactly the allow-listed channels; anything else is refused before it reaches a handler. Every call
 * must come from a frame on the studio's origin (`studioOrigin()`, null while no server runs): any other page
 * the window might show gets the preload's functions too, but not the main process's answers.
 */
export function registerIpc(
  ipcMain: IpcMainLike,
  handlers: Record<string, (...args: never[]) => unknown>,
  studioOrigin: () => string | null,
): void {
  for (const channel of Object.keys(handlers)) {
    if (!isAllowedChannel(channel)) throw new Error(`IPC channel "${channel}" is not on the allow-list`);
  }
  for (const channel of DESKTOP_CHANNELS) {
    const handler = handlers[channel];
    if (!handler) throw new Error(`IPC channel "${channel}" has no handler`);
    ipcMain.handle(channel, (event, ...args) => {
      const frameUrl = event.senderFrame?.url;
      if (!isTrustedSender(frameUrl, studioOrigin()))
        throw new Error(
          `IPC channel "${channel}" refused: the caller (${frameUrl ?? 'a closed frame'}) is not the studio`,
        );
      return (handler as (...a: unknown[]) => unknown)(...args);
    });
  }
}
