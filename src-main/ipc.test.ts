import { describe, expect, it } from 'vitest';
import { DESKTOP_CHANNELS } from './desktop-api';
import { isAllowedChannel, registerIpc, type IpcEventLike } from './ipc';

const STUDIO = 'http://127.0.0.1:8000';
const handlers = () => Object.fromEntries(DESKTOP_CHANNELS.map((c) => [c, (...args: unknown[]) => [c, ...args]]));

function register(origin: () => string | null = () => STUDIO) {
  const registered = new Map<string, (event: IpcEventLike, ...args: unknown[]) => unknown>();
  registerIpc({ handle: (channel, listener) => registered.set(channel, listener) }, handlers(), origin);
  return registered;
}
const from = (url: string | null): IpcEventLike => ({ senderFrame: url === null ? null : { url } });

describe('the IPC allow-list', () => {
  it('registers exactly the allowed channels, and calls from the studio reach their handlers', async () => {
    const registered = register();
    expect([...registered.keys()].sort()).toEqual([...DESKTOP_CHANNELS].sort());
    expect(await registered.get('app:info')!(from(`${STUDIO}/ui#token=abc`))).toEqual(['app:info']);
    expect(await registered.get('secrets:set')!(from(`${STUDIO}/ui`), 'CLOUD_A_API_KEY', 'k')).toEqual([
      'secrets:set',
      'CLOUD_A_API_KEY',
      'k',
    ]);
  });

  it('refuses any other channel', () => {
    expect(isAllowedChannel('shell:openExternal')).toBe(false);
    expect(isAllowedChannel('settings:get')).toBe(true);
    // Settings → Backup: the app's own dialogs choose the paths, so the studio sends none.
    expect(isAllowedChannel('backup:create')).toBe(true);
    expect(isAllowedChannel('backup:restore')).toBe(true);
    expect(() =>
      registerIpc({ handle: () => undefined }, { ...handlers(), 'fs:read': () => 'nope' }, () => STUDIO),
    ).toThrow('IPC channel "fs:read" is not on the allow-list');
  });

  it('refuses calls from any page but the studio, before the handler runs', () => {
    const registered = register();
    const call = (url: string | null) => () => registered.get('app:info')!(from(url));
    for (const url of [
      'https://attacker.example/ui',
      'http://127.0.0.1:8001/ui', // another local server
      'http://localhost:8000/ui', // the same server under another name is another origin
      'https://127.0.0.1:8000/ui',
      'data:text/html,<script>desktop.appInfo()</script>',
      'file:///tmp/page.html',
      'about:blank',
      null, // the frame navigated away or closed before the main process looked
    ])
      expect(call(url), String(url)).toThrow(/IPC channel "app:info" refused: the caller .* is not the studio/);
    expect(() => registered.get('secrets:status')!({})).toThrow('refused');
  });

  it('follows the studio to a new port after a restart, and trusts nothing while no server runs', () => {
    let origin: string | null = STUDIO;
    const registered = register(() => origin);
    origin = 'http://127.0.0.1:8123';
    expect(() => registered.get('app:info')!(from(`${STUDIO}/ui`))).toThrow('refused');
    expect(registered.get('app:info')!(from('http://127.0.0.1:8123/ui'))).toEqual(['app:info']);
    origin = null;
    expect(() => registered.get('app:info')!(from('http://127.0.0.1:8123/ui'))).toThrow('refused');
  });
});
