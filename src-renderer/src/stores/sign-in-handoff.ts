/**
 * How a studio tab knows that a `#token=` it is handed comes from the sign-in it started itself: it sends a random
 * value to `/auth/login?handoff=…`, which the server keeps in the login cookie and hands back beside the session
 * token (`/ui#token=…&handoff=…`). The value lives in this tab's session storage (this tab and origin only, gone
 * when the tab closes), so a link made anywhere else cannot carry it.
 */
const HANDOFF_KEY = 'svc.sign-in-handoff';

/** Starts a sign-in from this tab: a new random value (32 bytes, base64url), kept, to send along. */
export function beginHandoff(storage: Storage = sessionStorage): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const value = btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
  storage.setItem(HANDOFF_KEY, value);
  return value;
}

/** Whether `value`, from a fragment, is the one this tab's sign-in sent; a match is used up. */
export function endHandoff(value: string | null, storage: Storage = sessionStorage): boolean {
  const kept = storage.getItem(HANDOFF_KEY);
  if (!value || !kept || value !== kept) return false;
  storage.removeItem(HANDOFF_KEY);
  return true;
}
