/** Who is calling. Every service call receives it, so access rules live in one place. */
export interface Principal {
  /** A svc_users id for signed-in users; a fixed id for the anonymous admin and API-token callers. */
  id: string;
  kind: 'anonymous' | 'api_token' | 'session' | 'visitor';
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
