/** What a test passes to a server's request(): fetch's options, and `json` for a JSON body. */
export type TestRequestInit = RequestInit & { json?: unknown };

/**
 * fetch against a server under test, the one way every server handle in the tests does it: `json` becomes
 * the body with its content type, and `token` (when given) the bearer unless the caller sets its own.
 */
export function requestServer(baseUrl: string, path: string, init: TestRequestInit = {}, token?: string) {
  const headers = new Headers(init.headers);
  if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  return fetch(`${baseUrl}${path}`, { ...init, headers, body });
}
