import type { RunnableConfig } from '@langchain/core/runnables';
import {
  WRITES_IDX_MAP,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type pg from 'pg';
import { nextChannelVersion } from '../storage/channel-versions';
import { readsNoCheckpoint } from '../storage/thread-without-checkpoints';
import { whileUnavailable } from './retry';
import { StatementGroups } from './statement-groups';
import { prepared } from './prepared';

/** The LangGraph checkpointer's tables live in their own schema. */
export const CHECKPOINT_SCHEMA = 'graph_checkpoints';

/** Its tables, for the statements that remove checkpoints (a rollback, retention). */
export const CHECKPOINT_TABLES = {
  checkpoints: `"${CHECKPOINT_SCHEMA}".checkpoints`,
  blobs: `"${CHECKPOINT_SCHEMA}".checkpoint_blobs`,
  writes: `"${CHECKPOINT_SCHEMA}".checkpoint_writes`,
} as const;

/**
 * Statements of each kind (checkpoints, tasks' writes) under way at once in a process: what the runs write meanwhile
 * waits and goes in the next statements together, and the rest of the pool stays free for the runs' other work.
 */
const CHECKPOINT_STATEMENTS = 4;
/** The most checkpoints, or tasks' writes, in one statement. */
const MAX_GROUP = 100;

/** A checkpoint as one statement writes it, with its channel values (`_dumpBlobs`' rows). */
interface CheckpointRow {
  threadId: string;
  ns: string;
  id: string;
  parentId: string | undefined;
  checkpoint: unknown;
  metadata: unknown;
  blobs: unknown[][];
}

/** A task's write as `_dumpWrites` makes it: thread, namespace, checkpoint, task, index, channel, type, value. */
type WriteRow = unknown[];

/**
 * LangGraph's PostgreSQL checkpointer (schema `graph_checkpoints`), as the run engine needs it:
 *
 * - channel versions that stay unique when a thread branches (storage/channel-versions.ts);
 * - a checkpoint, with its channel values, written in one statement, and a task's writes in one: the stock saver
 *   sends a statement per value inside a transaction, a dozen round trips per step of every run;
 * - the checkpoints and writes of every run of the process in shared statements (db/statement-groups.ts): while
 *   CHECKPOINT_STATEMENTS are under way, what the other runs write waits and goes together in the next;
 * - reads and writes tried again while the database restarts or cannot be reached: each is idempotent on
 *   its keys (first write of a value wins, a checkpoint is replaced by the same one), so a run waits, not fails.
 */
export class CheckpointSaver extends PostgresSaver {
  private readonly tables: { checkpoints: string; blobs: string; writes: string };
  private readonly waitMs: number;
  private readonly checkpoints = new StatementGroups<CheckpointRow>(
    (items) => this.writeCheckpoints(items),
    CHECKPOINT_STATEMENTS,
    MAX_GROUP,
  );
  private readonly writes = new StatementGroups<WriteRow[]>(
    (groups) => this.writeWrites(groups, false),
    CHECKPOINT_STATEMENTS,
    MAX_GROUP,
  );
  private readonly replacingWrites = new StatementGroups<WriteRow[]>(
    (groups) => this.writeWrites(groups, true),
    CHECKPOINT_STATEMENTS,
    MAX_GROUP,
  );

  /** `waitS`: how long a read or write waits for the database to come back (DATABASE_WAIT_S). */
  constructor(
    private readonly db: pg.Pool,
    options: { schema: string; waitS: number },
  ) {
    super(db, undefined, { schema: options.schema });
    this.waitMs = options.waitS * 1000;
    const schema = `"${options.schema}"`;
    this.tables = {
      checkpoints: `${schema}.checkpoints`,
      blobs: `${schema}.checkpoint_blobs`,
      writes: `${schema}.checkpoint_writes`,
    };
  }

  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current);
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    if (readsNoCheckpoint(config)) return Promise.resolve(undefined);
    return whileUnavailable('reading a checkpoint', () => super.getTuple(config), this.waitMs);
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    if (config.configurable === undefined) throw new Error('Missing "configurable" field in "config" param');
    const { thread_id: threadId, checkpoint_ns: ns = '', checkpoint_id: parentId } = config.configurable;
    const [blobs, serializedMetadata] = await Promise.all([
      this._dumpBlobs(threadId, ns, checkpoint.channel_values, newVersions),
      this._dumpMetadata(metadata),
    ]);
    await this.checkpoints.add({
      threadId,
      ns,
      id: checkpoint.id,
      parentId,
      checkpoint: this._dumpCheckpoint(checkpoint),
      metadata: serializedMetadata,
      blobs,
    });
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } = config.configurable ?? {};
    const rows = await this._dumpWrites(threadId, ns, checkpointId, taskId, writes);
    if (rows.length === 0) return;
    // Writes to the special channels (an error, an interrupt…) replace the ones before; others keep the first.
    const replacing = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    await (replacing ? this.replacingWrites : this.writes).add(rows);
  }

  /** Checkpoints of any runs, with their channel values, in one statement. */
  private async writeCheckpoints(items: CheckpointRow[]): Promise<void> {
    // A checkpoint written twice in one statement could not be updated twice: the last one stands, as it would.
    const byKey = new Map(items.map((item) => [`${item.threadId}\u0000${item.ns}\u0000${item.id}`, item]));
    const blobs = items.flatMap((item) => item.blobs);
    const column = (i: number) => blobs.map((blob) => blob[i]);
    await whileUnavailable(
      'writing a checkpoint',
      () =>
        this.db.query(
          prepared(`WITH blobs AS (
             INSERT INTO ${this.tables.blobs} (thread_id, checkpoint_ns, channel, version, type, blob)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[])
             ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
           )
           INSERT INTO ${this.tables.checkpoints} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
                                                   checkpoint, metadata)
           SELECT c->>'thread_id', c->>'ns', c->>'id', c->>'parent_id', c->'checkpoint', c->'metadata'
             FROM jsonb_array_elements($7::jsonb) AS c
           ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
           DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata`),
          [
            column(0),
            column(1),
            column(2),
            column(3),
            column(4),
            column(5).map((blob) => (blob ? Buffer.from(blob as Uint8Array) : null)),
            JSON.stringify(
              [...byKey.values()].map((item) => ({
                thread_id: item.threadId,
                ns: item.ns,
                id: item.id,
                parent_id: item.parentId,
                checkpoint: item.checkpoint,
                metadata: item.metadata,
              })),
            ),
          ],
        ),
      this.waitMs,
    );
  }

  /** Tasks' writes of any runs in one statement: those of ordinary channels keep the first, the others replace it. */
  private async writeWrites(groups: WriteRow[][], replacing: boolean): Promise<void> {
    const all = groups.flat();
    // A write replaced twice in one statement could not be updated twice: the last one stands, as it would.
    const rows = replacing ? [...new Map(all.map((row) => [row.slice(0, 5).join('\u0000'), row])).values()] : all;
    const column = (i: number) => rows.map((row) => row[i]);
    await whileUnavailable(
      'writing a checkpoint’s writes',
      () =>
        this.db.query(
          prepared(`INSERT INTO ${this.tables.writes} (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[], $6::text[], $7::text[],
                              $8::bytea[])
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
         ${replacing ? 'DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob' : 'DO NOTHING'}`),
          [
            column(0),
            column(1),
            column(2),
            column(3),
            column(4),
            column(5),
            column(6),
            column(7).map((blob) => Buffer.from(blob as Uint8Array)),
          ],
        ),
      this.waitMs,
    );
  }
}
