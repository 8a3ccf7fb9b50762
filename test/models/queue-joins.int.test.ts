import { describe, expect, it, vi } from 'vitest';
import { llmQueueRepository } from '../../src-server/db/llm-queue.repository';
import { useMigratedDatabase } from '../helpers/database';

/**
 * Calls that join or leave the local runtime's queue at once go in a few shared statements (each takes the queue's
 * lock, so more at once would only hold the pool's connections while they wait for it), and the queue serves them as
 * it serves calls that come one by one: first come first served, a slot given back going to the next in line.
 */
describe('the local queue under a burst of calls', () => {
  const database = useMigratedDatabase(20);

  it('takes 60 calls in a few statements, grants the first ten the slots, and the next ten as those leave', async () => {
    const queue = llmQueueRepository(database.pool, 1);
    const join = (i: number) =>
      queue.enqueue({
        key: `call-${i}`,
        owner: 'process-a',
        tenant: 'project-a',
        label: `call ${i}`,
        leaseS: 60,
        slots: 10,
      });

    const statements = vi.spyOn(database.pool, 'query');
    const joined = await Promise.all(Array.from({ length: 60 }, (_, i) => join(i)));
    const joins = statements.mock.calls.length;
    statements.mockClear();
    expect(joins).toBeLessThanOrEqual(8);
    expect(new Set(joined.map((j) => j.ticket)).size).toBe(60);
    // First come first served: the ten first tickets hold the slots. (Calls asked at the same moment join in the order
    // their statements reach the database.)
    const inLine = [...joined].sort((a, b) => a.ticket - b.ticket);
    expect(inLine.map((j) => j.granted)).toEqual(Array.from({ length: 60 }, (_, i) => i < 10));
    // Asking again under the same key (an answer that was lost) gives the same ticket.
    expect(await join(3)).toEqual(joined[3]);

    await Promise.all(inLine.slice(0, 10).map((j) => queue.release(j.ticket, 10, { servedS: 1 })));
    const leaves = statements.mock.calls.length;
    statements.mockRestore();
    expect(leaves).toBeLessThanOrEqual(8);
    const { rows } = await database.pool.query<{ ticket: string }>(
      `SELECT ticket FROM svc_llm_queue WHERE granted_at IS NOT NULL ORDER BY ticket`,
    );
    expect(rows.map((r) => Number(r.ticket))).toEqual(inLine.slice(10, 20).map((j) => j.ticket));
    expect(await queue.counts()).toMatchObject({ active: 10, waiting: 40, served: 10 });
  });

  it('serves a process of the release before, which joins and leaves one call at a time, in the same line', async () => {
    await database.pool.query(`DELETE FROM svc_llm_queue`);
    const queue = llmQueueRepository(database.pool, 1);
    const join = (key: string) =>
      queue.enqueue({ key, owner: 'process-new', tenant: 'project-a', label: key, leaseS: 60, slots: 2 });
    // The release before calls the single forms (svc_llm_enqueue, svc_llm_leave), beside this version's groups.
    const oldJoin = async (key: string) => {
      const { rows } = await database.pool.query<{ ticket: string; granted: boolean }>(
        `SELECT ticket, granted FROM svc_llm_enqueue($1, 'process-old', 'project-a', $1, 60, 2)`,
        [key],
      );
      return { ticket: Number(rows[0]!.ticket), granted: rows[0]!.granted };
    };
    const granted = async () =>
      (
        await database.pool.query<{ key: string }>(
          `SELECT key FROM svc_llm_queue WHERE granted_at IS NOT NULL ORDER BY ticket`,
        )
      ).rows.map((r) => r.key);

    const [first, second] = await Promise.all([join('new-1'), join('new-2')]);
    expect([first!.granted, second!.granted]).toEqual([true, true]);
    expect(await oldJoin('old-1')).toMatchObject({ granted: false });
    expect(await join('new-3')).toMatchObject({ granted: false });

    // The release before gives a slot back: the first in line, its own call, has it.
    await database.pool.query(`SELECT * FROM svc_llm_leave($1, 2, 1.5, false, 1)`, [first!.ticket]);
    expect(await granted()).toEqual(['new-2', 'old-1']);
    // This version gives one back: the queue answers it as the ticket left it, then the next in line has the slot.
    expect(await queue.release(second!.ticket, 2, { servedS: 2.5 })).toEqual({ waiting: 1, active: 1 });
    expect(await granted()).toEqual(['old-1', 'new-3']);
    expect(await queue.counts()).toMatchObject({ active: 2, waiting: 0, recent_s: expect.arrayContaining([1.5, 2.5]) });
  });
});
