import { storageContract } from '../storage.contract';
import { MemoryStores } from './memory-stores';

storageContract('in memory', async () => {
  const stores = new MemoryStores();
  return {
    runs: stores.runStore,
    events: stores.eventStore,
    nodes: stores.nodeStore,
    modelCalls: stores.modelCalls,
    writes: stores.writeStore,
    toolCalls: stores.toolCalls,
    close: async () => undefined,
  };
});
