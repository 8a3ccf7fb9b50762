import { describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import { usersRepository } from '../../src-server/db/users.repository';
import { createTestDatabase } from '../helpers/database';
import { useIntegrationServer } from '../helpers/integration';

const ctx = useIntegrationServer({ model: false, catalog: false });
const ISSUER = 'https://login.example.com';

describe('the first user of an installation', () => {
  it('is the only one ever made admin: not whoever signs in next once no organisation has an admin', async () => {
    const users = usersRepository(ctx.server.pool);
    const ada = await users.upsertFromLogin(ISSUER, 'ada', 'Ada', 'ada@example.com');
    expect(ada.firstUser).toBe(true);
    expect(await users.memberships(ada.id)).toEqual([
      { scope_type: 'org', scope_id: DEFAULT_ORG_ID, scope_name: 'Default organisation', role: 'admin' },
    ]);

    // The instance administrator takes Ada's role away: now no organisation has an admin.
    const removed = await ctx.server.request(`/orgs/${DEFAULT_ORG_ID}/members/${ada.id}`, { method: 'DELETE' });
    expect(removed.status).toBe(204);

    const mallory = await users.upsertFromLogin(ISSUER, 'mallory', 'Mallory', null);
    expect(mallory.firstUser).toBe(false);
    expect(await users.memberships(mallory.id)).toEqual([]);
    // Nor does the first user get the role back by signing in again.
    const adaAgain = await users.upsertFromLogin(ISSUER, 'ada', 'Ada', 'ada@example.com');
    expect(adaAgain).toMatchObject({ id: ada.id, firstUser: false });
    expect(await users.memberships(ada.id)).toEqual([]);
  });

  it('is decided once when many first sign-ins race on two servers sharing the database', async () => {
    const db = await createTestDatabase();
    const [one, two] = [await ctx.start({ DATABASE_URL: db.url }), await ctx.start({ DATABASE_URL: db.url })];
    try {
      const logins = Array.from({ length: 12 }, (_, i) =>
        usersRepository((i % 2 ? one : two).pool).upsertFromLogin(ISSUER, `user-${i}`, `User ${i}`, null),
      );
      const results = await Promise.all(logins);
      expect(results.filter((r) => r.firstUser)).toHaveLength(1);
      const { rows } = await one.pool.query(`SELECT user_id FROM svc_memberships WHERE role = 'admin'`);
      expect(rows).toEqual([{ user_id: results.find((r) => r.firstUser)!.id }]);
    } finally {
      await one.close();
      await two.close();
      await db.drop();
    }
  });
});
