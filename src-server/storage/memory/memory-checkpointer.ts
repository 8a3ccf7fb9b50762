import { MemorySaver } from '@langchain/langgraph-checkpoint';
import { nextChannelVersion } from '../channel-versions';

/**
 * LangGraph's in-memory checkpointer with the channel versions of the PostgreSQL one: the twin of
 * db/checkpointer.ts for unit tests. It keeps every checkpoint and write serialised by the same serializer as the
 * PostgreSQL saver (LangGraph's JSON+), so a value that does not survive a round trip there (a Date, `undefined`)
 * does not survive here either.
 */
export class MemoryCheckpointer extends MemorySaver {
  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current);
  }
}
