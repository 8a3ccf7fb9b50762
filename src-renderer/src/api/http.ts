import { TOKEN_STORAGE_KEY } from '@contracts/storage';
import type { z } from 'zod';

/** An error answer of the API: its envelope, with per-field problems when the server gave them. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: { field: string; message: string }[] = [],
    /** The envelope's `details` as the server gave them (an agent source's `problems`, say). */
    readonly details: unknown = undefined,
  ) {
    super(message);
  }
}

export function getToken(): string | null {
  return localStorage.getItem(TOKEN_STORAGE_KEY);
}

export function setToken(token: string | null): void {
  if (token) localStorage.setItem(TOKEN_STORAGE_KEY, token);
  else localStorage.removeItem(TOKEN_STORAGE_KEY);
}

/** Listeners told when the server refuses the token, so the app can ask for a new one. */
const unauthorizedListeners = new Set<() => void>();
export function onUnauthorized(listener: () => void): void {
  unauthorizedListeners.add(listener);
}

/** The stored token's authorization header, or that of `token` when one is given. */
export function headers(extra: Record<string, string> = {}, token = getToken()): Record<string, string> {
  return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
}

/** `notify`: whether a 401 means the stored token was refused (a call with a token of its own says nothing of it). */
export async function raise(res: Response, notify = true): Promise<never> {
  if (res.status === 401 && notify) unauthorizedListeners.forEach((l) => l());
  const body = await res.json().catch(() => null);
  const error = body?.error;
  throw new ApiError(
    res.status,
    error?.code ?? 'error',
    error?.message ?? `${res.status} ${res.statusText}`,
    error?.details?.fields ?? [],
    error?.details,
  );
}

/** The server answered with something its own schema does not describe: studio and server disagree. */
export class ResponseShapeError extends Error {}

/**
 * The one way the studio calls the JSON API, with the stored token unless `token` names another. With `schema` (the
 * server's own, from `@contracts/*`), the answer is checked against it, as stream events are: a studio and a server
 * that disagree fail here, with what differs, rather than somewhere in a component.
 */
export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal; token?: string; schema?: z.ZodType<T> } = {},
): Promise<T> {
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers: headers(init.body !== undefined ? { 'content-type': 'application/json' } : {}, init.token),
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    signal: init.signal,
  });
  if (!res.ok) await raise(res, init.token === undefined);
  if (res.status === 204) return undefined as T;
  const body: unknown = await res.json();
  if (!init.schema) return body as T;
  const parsed = init.schema.safeParse(body);
  if (!parsed.success)
    throw new ResponseShapeError(
      `${init.method ?? 'GET'} ${path.split('?')[0]} answered in an unexpected shape: ${parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
        .join('; ')}`,
    );
  return parsed.data;
}
