import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CHECKPOINT_SCHEMA, CheckpointSaver } from '../../src-server/db/checkpointer';
import { useMigratedDatabase } from '../helpers/database';

/**
 * The checkpoints of many runs at once go in a few shared statements rather than one per step of every run (which
 * kept the pool's connections busy for seconds with hundreds of runs), and each run still learns of its own: stored,
 * readable, or refused alone.
 */
describe('checkpoints of many runs at once', () => {
  const database = useMigratedDatabase(20);
  let saver: CheckpointSaver;
  beforeAll(async () => {
    saver = new CheckpointSaver(database.pool, { schema: CHECKPOINT_SCHEMA, waitS: 1 });
    await saver.setup();
  });
  afterAll(() => vi.restoreAllMocks());

  const put = (threadId: string, message: string, id = uuid6(-1)) =>
    saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: '' } },
      { ...emptyCheckpoint(), id, channel_values: { message }, channel_versions: { message: 1 } },
      { source: 'input', step: -1, parents: {} },
      { message: 1 },
    );

  it('go in a few statements, and each is stored with its values', async () => {
    const statements = vi.spyOn(database.pool, 'query');
    const threads = Array.from({ length: 60 }, (_, i) => `thread-${i}`);
    const configs = await Promise.all(threads.map((thread) => put(thread, `hello ${thread}`)));
    expect(statements.mock.calls.length).toBeLessThanOrEqual(8);
    statements.mockRestore();
    for (const [i, thread] of threads.entries()) {
      const tuple = await saver.getTuple(configs[i]!);
      expect(tuple?.checkpoint.channel_values).toEqual({ message: `hello ${thread}` });
    }
  });

  it('fail only the run whose checkpoint the database refuses', async () => {
    const threads = Array.from({ length: 30 }, (_, i) => `refusal-${i}`);
    // A NUL is not text to PostgreSQL: this one checkpoint cannot be stored.
    const outcomes = await Promise.allSettled(
      threads.map((thread, i) => put(thread, 'fine', i === 17 ? 'bad\u0000id' : undefined)),
    );
    expect(outcomes.filter((o) => o.status === 'rejected')).toHaveLength(1);
    expect(outcomes[17]!.status).toBe('rejected');
    for (const [i, outcome] of outcomes.entries()) {
      if (i === 17 || outcome.status !== 'fulfilled') continue;
      expect((await saver.getTuple(outcome.value))?.checkpoint.channel_values).toEqual({ message: 'fine' });
    }
  });
});
