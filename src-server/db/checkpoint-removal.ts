import type pg from 'pg';
import { CHECKPOINT_TABLES as cp } from './checkpointer';

export interface DeletedCheckpoints {
  checkpoints: number;
  writes: number;
  blobs: number;
}

/**
 * Deletes the checkpoints `ids` of a thread, and their pending writes, then every blob of the thread that no
 * remaining checkpoint refers to, in the caller's transaction: a rolled-back run's checkpoints
 * (runs.repository.ts), or those retention prunes (retention.repository.ts). LangGraph writes a channel's value once
 * per version, as a blob keyed by (thread, namespace, channel, version), and each checkpoint names the version of each
 * channel it holds in its `channel_versions` (the stock saver reads a checkpoint by joining those names to the
 * blobs): a blob is shared by every checkpoint whose step left the channel alone, so only one that no checkpoint left
 * names goes. Call it on a thread no run executes: a running run's next checkpoint shares its parent's blobs.
 */
export async function deleteCheckpoints(
  client: pg.PoolClient,
  threadId: string,
  ids: readonly string[],
): Promise<DeletedCheckpoints> {
  if (ids.length === 0) return { checkpoints: 0, writes: 0, blobs: 0 };
  const writes = await client.query(`DELETE FROM ${cp.writes} WHERE thread_id = $1 AND checkpoint_id = ANY($2)`, [
    threadId,
    ids,
  ]);
  const checkpoints = await client.query(
    `DELETE FROM ${cp.checkpoints} WHERE thread_id = $1 AND checkpoint_id = ANY($2)`,
    [threadId, ids],
  );
  const blobs = await client.query(
    `DELETE FROM ${cp.blobs} b
      WHERE b.thread_id = $1
        AND NOT EXISTS (
          SELECT 1 FROM ${cp.checkpoints} c, jsonb_each_text(c.checkpoint -> 'channel_versions') v
           WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
             AND v.key = b.channel AND v.value = b.version)`,
    [threadId],
  );
  return { checkpoints: checkpoints.rowCount ?? 0, writes: writes.rowCount ?? 0, blobs: blobs.rowCount ?? 0 };
}
