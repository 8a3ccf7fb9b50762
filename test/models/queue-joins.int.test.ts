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
});
