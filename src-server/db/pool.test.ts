import net from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPool, isDatabaseUnavailable } from './pool';

const servers: net.Server[] = [];
afterAll(() => servers.forEach((s) => s.close()));

/** A TCP server on a free loopback port that does `onConnection` with every client. */
async function tcpServer(onConnection: (socket: net.Socket) => void): Promise<number> {
  const server = net.createServer(onConnection).listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  return (server.address() as net.AddressInfo).port;
}

async function closedPort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const failureOf = (work: () => Promise<unknown>) =>
  work().then(
    () => undefined,
    (error: unknown) => error,
  );

describe('isDatabaseUnavailable', () => {
  it('recognises what node-postgres throws when nothing listens, the connection drops, or the pool waits too long', async () => {
    const refused = await failureOf(async () => {
      const client = new pg.Client({ connectionString: `postgresql://u:p@127.0.0.1:${await closedPort()}/db` });
      await client.connect();
    });
    expect(refused).toMatchObject({ code: 'ECONNREFUSED' });
    expect(isDatabaseUnavailable(refused)).toBe(true);

    const dropped = await failureOf(async () => {
      const port = await tcpServer((socket) => socket.destroy());
      const client = new pg.Client({ connectionString: `postgresql://u:p@127.0.0.1:${port}/db` });
      client.on('error', () => undefined);
      await client.connect();
    });
    expect(String(dropped)).toMatch(/Connection terminated|ECONNRESET/);
    expect(isDatabaseUnavailable(dropped)).toBe(true);

    const silent = await tcpServer(() => undefined);
    const pool = new pg.Pool({
      connectionString: `postgresql://u:p@127.0.0.1:${silent}/db`,
      connectionTimeoutMillis: 200,
    });
    const slow = await failureOf(() => pool.query('SELECT 1'));
    await pool.end().catch(() => undefined);
    expect(String(slow)).toMatch(/timeout/);
    expect(isDatabaseUnavailable(slow)).toBe(true);

    // A connection that does not open in time (as the service's own pool opens them: createPool's TimedClient).
    const unanswered = createPool(`postgresql://u:p@127.0.0.1:${silent}/db`, 1, 200);
    const unopened = await failureOf(() => unanswered.query('SELECT 1'));
    await unanswered.end().catch(() => undefined);
    expect(String(unopened)).toMatch(/timeout expired/);
    expect(isDatabaseUnavailable(unopened)).toBe(true);
  });

  it("recognises PostgreSQL's connection exceptions (class 08) and shutdown refusals, not a failing statement", () => {
    for (const code of ['08000', '08003', '08006', '08P01', '57P01', '57P02', '57P03']) {
      expect(isDatabaseUnavailable(Object.assign(new Error('x'), { code })), code).toBe(true);
    }
    for (const code of ['42P01', '23505', '40001', '57014']) {
      expect(isDatabaseUnavailable(Object.assign(new Error('x'), { code })), code).toBe(false);
    }
    expect(isDatabaseUnavailable(new AggregateError([Object.assign(new Error('a'), { code: 'ECONNREFUSED' })]))).toBe(
      true,
    );
    expect(isDatabaseUnavailable(undefined)).toBe(false);
    expect(isDatabaseUnavailable('ECONNREFUSED')).toBe(false);
  });

  it('leaves a model runtime that is down to its own error: fetch carries ECONNREFUSED as its cause', async () => {
    const port = await closedPort();
    const failed = await failureOf(() => fetch(`http://127.0.0.1:${port}/`));
    expect((failed as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });
    expect(failed).toBeInstanceOf(TypeError);
    expect(isDatabaseUnavailable(failed)).toBe(false);
  });
});
