import { describe, expect, it } from 'vitest';
import { DESKTOP_CHANNELS } from './desktop-api';
import { isAllowedChannel, registerIpc } from './ipc';

const handlers = () => Object.fromEntries(DESKTOP_CHANNELS.map((c) => [c, () => c]));

describe('the IPC allow-list', () => {
  it('registers exactly the allowed channels, and they reach their handlers', async () => {
    const registered = new Map<string, (event: unknown, ...args: unknown[]) => unknown>();
    registerIpc({ handle: (channel, listener) => registered.set(channel, listener) }, handlers());
    expect([...registered.keys()].sort()).toEqual([...DESKTOP_CHANNELS].sort());
    expect(await registered.get('app:info')!({})).toBe('app:info');
  });

  it('refuses any other channel', () => {
    expect(isAllowedChannel('shell:openExternal')).toBe(false);
    expect(isAllowedChannel('settings:get')).toBe(true);
    expect(() => registerIpc({ handle: () => undefined }, { ...handlers(), 'fs:read': () => 'nope' })).toThrow(
      'IPC channel "fs:read" is not on the allow-list',
    );
  });
});
