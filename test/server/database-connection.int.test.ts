import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, withTransaction, type Pool } from '../../src-server/db/pool';
import { createTestDatabase, type TestDatabase } from '../helpers/database';

/**
 * PostgreSQL ending a connection the service has checked out (it was killed, restarted, or an administrator ended
 * the backend) between two statements of a transaction: node-postgres then emits 'error' on the client, which would
 * end the process if nobody listened. The server's every-few-seconds work (leases, expired gates) holds such
 * connections, so this is what a database restart meets.
 */
let db: TestDatabase;
let pool: Pool;
let admin: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url);
  admin = createPool(db.url);
});

afterAll(async () => {
  await pool.end();
  await admin.end();
  await db.drop();
});

describe('a connection lost inside a transaction', () => {
  it('fails that transaction only: the process lives on, and the pool serves the next one', async () => {
    const failed = withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      // The server's FATAL arrives while the connection waits between statements, as it does when PostgreSQL stops.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await client.query('SELECT 1');
    });
    await expect(failed).rejects.toThrow();
    // An 'error' nobody heard would have failed this test file as an unhandled error before this line.
    await expect(
      withTransaction(pool, async (client) => (await client.query('SELECT 2 AS two')).rows[0]),
    ).resolves.toEqual({
      two: 2,
    });
  });
});
