import { SECRET_NAMES, type DesktopNotification, type SecretName } from './desktop-api';

/**
 * What the desktop window may do, as plain functions of URLs and names so they are tested without
 * Electron. The window's preload gives every page it loads `window.desktop`; these rules keep the
 * bridge to the studio, which is served by the app's own server on a loopback address.
 */

function originOf(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const origin = new URL(url).origin;
    // Opaque origins (data:, file:, about:) serialise as "null" and must never match anything.
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

/** Whether a frame at `frameUrl` is the studio served from `studioOrigin` (null while no server runs). */
export function isTrustedSender(frameUrl: string | null | undefined, studioOrigin: string | null): boolean {
  const origin = originOf(frameUrl);
  return origin !== null && origin === originOf(studioOrigin);
}

/** The window stays on the studio: a navigation or redirect elsewhere is refused. */
export function allowNavigation(url: string, studioOrigin: string | null): boolean {
  return isTrustedSender(url, studioOrigin);
}

/** Only web addresses go to the system's browser: file:, smb:, custom schemes and the like could run things. */
export function isOpenableExternal(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** The preload's types stop nothing at run time: a secret name from the renderer is checked here. */
export function assertSecretName(name: unknown): asserts name is SecretName {
  if (typeof name !== 'string' || !(SECRET_NAMES as readonly string[]).includes(name))
    throw new Error(`"${String(name)}" is not a secret the app stores (one of ${SECRET_NAMES.join(', ')})`);
}

/** The longest notification title and body the app shows; the system would cut them anyway. */
export const NOTIFICATION_LIMITS = { title: 200, body: 1000 } as const;

/** A notification from the renderer is checked here too: two strings of bounded length, nothing else. */
export function toNotification(value: unknown): DesktopNotification {
  const { title, body } = (value ?? {}) as Record<string, unknown>;
  if (typeof value !== 'object' || typeof title !== 'string' || typeof body !== 'string')
    throw new Error('a notification is { title: string, body: string }');
  if (title.trim() === '') throw new Error('a notification needs a title');
  return { title: title.slice(0, NOTIFICATION_LIMITS.title), body: body.slice(0, NOTIFICATION_LIMITS.body) };
}

/** The parts of Electron's WebContents the window guard uses, so tests can hand in their own. */
export interface GuardedContents {
  on(
    event: 'will-navigate' | 'will-redirect',
    listener: (details: { url: string; preventDefault(): void }) => void,
  ): unknown;
  setWindowOpenHandler(handler: (details: { url: string }) => { action: 'deny' }): void;
}

/**
 * Keeps a window on the studio: navigations and redirects to other origins are refused, a link the user
 * follows to another site opens in the system's browser (web addresses only), and no page opens windows.
 */
export function guardWindow(
  contents: GuardedContents,
  studioOrigin: () => string | null,
  openExternal: (url: string) => Promise<void>,
): void {
  const openOutside = (url: string) => {
    if (isOpenableExternal(url)) void openExternal(url).catch(() => undefined);
  };
  contents.on('will-navigate', (details) => {
    if (allowNavigation(details.url, studioOrigin())) return;
    details.preventDefault();
    openOutside(details.url);
  });
  // A redirect is the server's choice, not the user's: refused, and not handed to the browser either.
  contents.on('will-redirect', (details) => {
    if (!allowNavigation(details.url, studioOrigin())) details.preventDefault();
  });
  contents.setWindowOpenHandler(({ url }) => {
    openOutside(url);
    return { action: 'deny' };
  });
}
