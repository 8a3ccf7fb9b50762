import type { LoginUserRow, MembershipRow, UserRow, UsersRepository } from '../db/users.repository';

/** The people who sign in (http/auth.router.ts): made or refreshed at each OIDC sign-in, and what /auth/me shows. */
export function usersService(deps: { users: UsersRepository }) {
  const { users } = deps;
  return {
    /** The user of an identity-provider login; the very first one becomes admin of the default organisation. */
    upsertFromLogin: (
      issuer: string,
      subject: string,
      name: string | null,
      email: string | null,
      emailVerified = false,
    ): Promise<LoginUserRow> => users.upsertFromLogin(issuer, subject, name, email, emailVerified),

    get: (id: string): Promise<UserRow | undefined> => users.get(id),

    memberships: (userId: string): Promise<MembershipRow[]> => users.memberships(userId),
  };
}

export type UsersService = ReturnType<typeof usersService>;
