/** Who is calling. Every service call receives it, so access rules live in one place. */
export interface Principal {
  /**
   * A svc_users id: a signed-in user's, or the fixed id of a built-in principal (the anonymous admin, the API-token
   * caller), whose row is made at start. The visitor's is no row: it never acts on anything of its own.
   */
  id: string;
  kind: 'anonymous' | 'api_token' | 'session' | 'visitor';
  /** A session's user who called with a token she made (a personal access token) or an MCP client holds for her. */
  via?: 'personal_token' | 'oauth';
  name: string;
  email?: string;
  /** Anonymous (auth disabled) and API-token callers administer the whole instance. */
  instanceAdmin: boolean;
}

export const ANONYMOUS_ADMIN: Principal = Object.freeze({
  id: '00000000-0000-0000-0000-000000000000',
  kind: 'anonymous',
  name: 'anonymous',
  instanceAdmin: true,
});

export const API_TOKEN_ADMIN: Principal = Object.freeze({
  id: '00000000-0000-0000-0000-000000000001',
  kind: 'api_token',
  name: 'api-token',
  instanceAdmin: true,
});

/** The principals that are no one's sign-in, with rows of their own in svc_users (see ensureBuiltInPrincipals). */
export const BUILT_IN_PRINCIPALS: readonly Principal[] = [ANONYMOUS_ADMIN, API_TOKEN_ADMIN];

export const isBuiltInPrincipal = (id: string) => BUILT_IN_PRINCIPALS.some((p) => p.id === id);

/** A caller without a valid token on a public route: may read only what is public. */
export const PUBLIC_VISITOR: Principal = Object.freeze({
  id: '00000000-0000-0000-0000-000000000002',
  kind: 'visitor',
  name: 'visitor',
  instanceAdmin: false,
});

export interface RequestContext {
  principal: Principal;
}
