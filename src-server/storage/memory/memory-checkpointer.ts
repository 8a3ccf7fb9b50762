import type { RunnableConfig } from '@langchain/core/runnables';
import { MemorySaver, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { nextChannelVersion } from '../channel-versions';
import { readsNoCheckpoint } from '../thread-without-checkpoints';

/**
 * LangGraph's in-memory checkpointer with the channel versions of the PostgreSQL one: the twin of
 * db/checkpointer.ts for unit tests. It keeps every checkpoint and write serialised by the same serializer as the
 * PostgreSQL saver (LangGraph's JSON+), so a value that does not survive a round trip there (a Date, `undefined`)
 * does not survive here either. It answers a thread without checkpoints as that one does (thread-without-checkpoints).
 */
export class MemoryCheckpointer extends MemorySaver {
  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current);
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return readsNoCheckpoint(config) ? Promise.resolve(undefined) : super.getTuple(config);
  }
}
