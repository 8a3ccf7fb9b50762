import type { Me } from '@contracts/auth';
import { api } from './http';

export const authApi = {
  me: () => api<Me>('/auth/me'),
  /** Where the browser goes to sign in with the identity provider (a redirect, not a JSON call). */
  loginUrl: '/auth/login',
};
