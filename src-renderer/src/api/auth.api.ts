import { MeSchema } from '@contracts/auth';
import { api } from './http';

export const authApi = {
  me: () => api('/auth/me', { schema: MeSchema }),
  /** Who another token signs in as; its refusal does not send the studio to the sign-in screen. */
  meAs: (token: string) => api('/auth/me', { token, schema: MeSchema }),
  /**
   * Where the browser goes to sign in with the identity provider (a redirect, not a JSON call); `handoff` comes back
   * beside the session token, which tells the tab the token is from its own sign-in (stores/sign-in-handoff.ts).
   */
  loginUrl: (handoff?: string) => (handoff ? `/auth/login?handoff=${encodeURIComponent(handoff)}` : '/auth/login'),
};
