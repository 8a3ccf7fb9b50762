import { describe, expect, it } from 'vitest';
import { SECRET_NAMES } from './desktop-api';
import {
  allowNavigation,
  assertSecretName,
  guardWindow,
  isOpenableExternal,
  isTrustedSender,
  NOTIFICATION_LIMITS,
  toNotification,
  type GuardedContents,
} from './guards';

const STUDIO = 'http://127.0.0.1:8000';

describe('isTrustedSender', () => {
  it('trusts the studio on its own origin, whatever the path or fragment', () => {
    expect(isTrustedSender(`${STUDIO}/ui#token=abc`, STUDIO)).toBe(true);
    expect(isTrustedSender(`${STUDIO}/docs`, `${STUDIO}/`)).toBe(true);
    expect(isTrustedSender('http://[::1]:8000/ui', 'http://[::1]:8000')).toBe(true);
  });

  it('trusts nothing else: other hosts, ports, schemes, opaque origins, no frame, no server', () => {
    expect(isTrustedSender('https://attacker.example/', STUDIO)).toBe(false);
    expect(isTrustedSender('http://127.0.0.1:8001/ui', STUDIO)).toBe(false);
    expect(isTrustedSender('http://localhost:8000/ui', STUDIO)).toBe(false);
    expect(isTrustedSender('http://127.0.0.1:8000.attacker.example/ui', STUDIO)).toBe(false);
    expect(isTrustedSender('http://user@127.0.0.1:8000@attacker.example/', STUDIO)).toBe(false);
    expect(isTrustedSender('data:text/html,hi', STUDIO)).toBe(false);
    expect(isTrustedSender('data:text/html,hi', 'data:text/html,hi')).toBe(false);
    expect(isTrustedSender('about:blank', STUDIO)).toBe(false);
    expect(isTrustedSender('not a url', STUDIO)).toBe(false);
    expect(isTrustedSender(undefined, STUDIO)).toBe(false);
    expect(isTrustedSender(`${STUDIO}/ui`, null)).toBe(false);
  });
});

describe('toNotification', () => {
  it('passes a title and a body of bounded length, and nothing else the renderer adds', () => {
    expect(toNotification({ title: 'Approval waiting', body: 'change-review: Ship it?' })).toEqual({
      title: 'Approval waiting',
      body: 'change-review: Ship it?',
    });
    // Extra fields (an icon path, actions, a sound) are dropped, long texts cut.
    const long = toNotification({ title: 't'.repeat(500), body: 'b'.repeat(5000), icon: '/etc/passwd', silent: false });
    expect(long).toEqual({ title: 't'.repeat(NOTIFICATION_LIMITS.title), body: 'b'.repeat(NOTIFICATION_LIMITS.body) });
  });

  it('refuses anything that is not two strings with a title', () => {
    for (const value of [null, undefined, 'text', 42, { title: 'x' }, { title: 1, body: 'b' }, { body: 'b' }])
      expect(() => toNotification(value), JSON.stringify(value)).toThrow(
        'a notification is { title: string, body: string }',
      );
    expect(() => toNotification({ title: '  ', body: 'b' })).toThrow('a notification needs a title');
  });
});

describe('allowNavigation', () => {
  it('keeps the window on the studio', () => {
    expect(allowNavigation(`${STUDIO}/ui`, STUDIO)).toBe(true);
    expect(allowNavigation(`${STUDIO}/auth/login`, STUDIO)).toBe(true);
    expect(allowNavigation('https://example.com/', STUDIO)).toBe(false);
    expect(allowNavigation('file:///etc/passwd', STUDIO)).toBe(false);
    expect(allowNavigation('javascript:alert(1)', STUDIO)).toBe(false);
    expect(allowNavigation(`${STUDIO}/ui`, null)).toBe(false);
  });
});

describe('isOpenableExternal', () => {
  it('hands only web addresses to the system', () => {
    expect(isOpenableExternal('https://example.com/docs')).toBe(true);
    expect(isOpenableExternal('http://127.0.0.1:8000/docs')).toBe(true);
    for (const url of [
      'file:///usr/bin/xcalc',
      'smb://server/share/run.exe',
      'javascript:alert(1)',
      'data:text/html,hi',
      'ms-msdt:/id PCWDiagnostic',
      'vscode://file/etc/passwd',
      'mailto:someone@example.com',
      '/relative/path',
      '',
    ])
      expect(isOpenableExternal(url), url).toBe(false);
  });
});

describe('assertSecretName', () => {
  it('accepts the allow-listed names and refuses anything else at run time', () => {
    for (const name of SECRET_NAMES) expect(() => assertSecretName(name)).not.toThrow();
    for (const name of ['PATH', 'cloud_a_api_key', '', '__proto__', 42, null, undefined, { name: 'SESSION_SECRET' }])
      expect(() => assertSecretName(name), String(name)).toThrow(/is not a secret the app stores/);
  });
});

/** A stand-in for Electron's WebContents: records the listeners and the window-open handler. */
function fakeContents() {
  const listeners = new Map<string, (details: { url: string; preventDefault(): void }) => void>();
  let openHandler: ((details: { url: string }) => { action: 'deny' }) | undefined;
  const contents: GuardedContents = {
    on: (event, listener) => listeners.set(event, listener),
    setWindowOpenHandler: (handler) => void (openHandler = handler),
  };
  const emit = (event: 'will-navigate' | 'will-redirect', url: string) => {
    let prevented = false;
    listeners.get(event)!({ url, preventDefault: () => void (prevented = true) });
    return prevented;
  };
  return { contents, emit, open: (url: string) => openHandler!({ url }) };
}

describe('guardWindow', () => {
  function guarded() {
    const fake = fakeContents();
    const opened: string[] = [];
    guardWindow(
      fake.contents,
      () => STUDIO,
      async (url) => void opened.push(url),
    );
    return { ...fake, opened };
  }

  it('lets the studio navigate within its origin', () => {
    const { emit, opened } = guarded();
    expect(emit('will-navigate', `${STUDIO}/ui#token=abc`)).toBe(false);
    expect(emit('will-redirect', `${STUDIO}/ui`)).toBe(false);
    expect(opened).toEqual([]);
  });

  it('refuses navigation elsewhere, and opens a followed web link in the browser instead', () => {
    const { emit, opened } = guarded();
    expect(emit('will-navigate', 'https://example.com/article')).toBe(true);
    expect(emit('will-navigate', 'file:///etc/passwd')).toBe(true);
    expect(opened).toEqual(['https://example.com/article']);
  });

  it('refuses redirects elsewhere without handing them to the browser', () => {
    const { emit, opened } = guarded();
    expect(emit('will-redirect', 'https://attacker.example/')).toBe(true);
    expect(opened).toEqual([]);
  });

  it('opens no window: web addresses go to the browser, anything else nowhere', () => {
    const { open, opened } = guarded();
    expect(open(`${STUDIO}/docs`)).toEqual({ action: 'deny' });
    expect(open('https://example.com/')).toEqual({ action: 'deny' });
    expect(open('smb://server/share/run.exe')).toEqual({ action: 'deny' });
    expect(opened).toEqual([`${STUDIO}/docs`, 'https://example.com/']);
  });

  it('survives a browser that fails to open', async () => {
    const fake = fakeContents();
    guardWindow(
      fake.contents,
      () => STUDIO,
      () => Promise.reject(new Error('no browser')),
    );
    expect(fake.open('https://example.com/')).toEqual({ action: 'deny' });
    await new Promise((resolve) => setTimeout(resolve, 0));
  });
});
