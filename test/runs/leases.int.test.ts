import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * The lease renewal and the runs that start while it is on its way. A process renews the leases of its runs in one
 * UPDATE, and stops any execution whose run the answer leaves out (cancelled, or taken over after a stall). A run
 * whose row is written after that UPDATE took its snapshot is left out too, although it is this process's: it must
 * not be stopped for that, or its stream would never end and its row would stay `running`, leased here, forever.
 */
// Renewals every half second.
const ctx = useIntegrationServer({ server: { RUN_LEASE_S: '2' } });

const start = (message: string) => ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message } });

describe('a run that starts while its process renews its leases', () => {
  it('is not stopped because the renewal did not see its row yet', async () => {
    // About a second a phase: the first run is still running while the renewal waits.
    ctx.model.reply(numberedTokens(40), 25);
    const firstStream = start('the first run');
    const firstId = await until(async () => {
      const { rows } = await ctx.server.pool.query(`SELECT id FROM svc_runs WHERE message = 'the first run'`);
      return rows[0]?.id as string | undefined;
    });

    // Hold the first run's row: the next renewal's UPDATE takes its snapshot, then waits for this lock.
    const holder = new pg.Client({ connectionString: ctx.db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM svc_runs WHERE id = $1 FOR UPDATE', [firstId]);
      await until(async () => {
        const { rows } = await ctx.server.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE svc_runs SET lease_until%'`,
        );
        return rows.length > 0 ? true : undefined;
      }, 10_000);
      // A run whose row is written now, after the waiting renewal's snapshot.
      const secondStream = start('the second run');
      await until(async () => {
        const { rows } = await ctx.server.pool.query(`SELECT 1 FROM svc_runs WHERE message = 'the second run'`);
        return rows.length > 0 ? true : undefined;
      });
      await holder.query('COMMIT');

      const second = await readEvents(await secondStream);
      expect(second.at(-1)!.data.type).toBe('run_done');
      expect((await readEvents(await firstStream)).at(-1)!.data.type).toBe('run_done');
      expect(ctx.server.logs.filter((line) => line.includes('no longer executed by this process'))).toEqual([]);
    } finally {
      await holder.end();
    }
  });
});
