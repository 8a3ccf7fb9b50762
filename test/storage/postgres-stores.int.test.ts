import { CHECKPOINT_SCHEMA, CheckpointSaver } from '../../src-server/db/checkpointer';
import { runWritesRepository } from '../../src-server/db/run-writes.repository';
import { modelCallsRepository } from '../../src-server/db/model-calls.repository';
import { runEventsRepository } from '../../src-server/db/run-events.repository';
import { runNodesRepository } from '../../src-server/db/run-nodes.repository';
import { runsRepository } from '../../src-server/db/runs.repository';
import { toolCallsRepository } from '../../src-server/db/tool-calls.repository';
import { createPool } from '../../src-server/db/pool';
import { initDb } from '../../src-server/db/migrate';
import { storageContract } from '../../src-server/storage/storage.contract';
import { createTestDatabase } from '../helpers/database';

storageContract('PostgreSQL', async () => {
  const db = await createTestDatabase();
  const pool = createPool(db.url);
  await initDb(pool);
  // A rollback removes a run's checkpoints too: their tables are there, as in every server.
  await new CheckpointSaver(pool, { schema: CHECKPOINT_SCHEMA, waitS: 1 }).setup();
  return {
    runs: runsRepository(pool),
    events: runEventsRepository(pool),
    nodes: runNodesRepository(pool),
    modelCalls: modelCallsRepository(pool),
    writes: runWritesRepository(pool),
    toolCalls: toolCallsRepository(pool),
    close: async () => {
      await pool.end();
      await db.drop();
    },
  };
});
