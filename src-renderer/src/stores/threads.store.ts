import type { Thread } from '@contracts/runs';
import { defineStore } from 'pinia';
import { errorMessage } from '@contracts/errors';
import { ref } from 'vue';
import { threadsApi } from '../api/threads.api';
import { useSessionStore } from './session.store';

const PAGE = 50;

/** Threads the caller may see, most recent first, a page at a time. */
export const useThreadsStore = defineStore('threads', () => {
  const threads = ref<Thread[]>([]);
  const nextCursor = ref<string | null>(null);
  /** Why the last reload failed; the list shown is then out of date. */
  const error = ref<string | null>(null);
  /** The project chosen in the switcher: only its threads are listed (all the caller may see without one). */
  const session = useSessionStore();

  /**
   * Reloads from the top, keeping as many threads as were shown. It never throws: a failure is kept in `error`
   * for the list to show with a Retry, as the list is reloaded from many places (start-up, after a run).
   */
  async function load(): Promise<void> {
    try {
      const page = await threadsApi.list(
        Math.max(PAGE, Math.min(threads.value.length, 200)),
        undefined,
        session.scope.projectId,
      );
      threads.value = page.items;
      nextCursor.value = page.next_cursor;
      error.value = null;
    } catch (e) {
      error.value = `Threads could not be loaded: ${errorMessage(e)}`;
    }
  }

  async function loadMore(): Promise<void> {
    if (!nextCursor.value) return;
    const page = await threadsApi.list(PAGE, nextCursor.value, session.scope.projectId);
    const seen = new Set(threads.value.map((t) => t.id));
    threads.value.push(...page.items.filter((t) => !seen.has(t.id)));
    nextCursor.value = page.next_cursor;
  }

  async function remove(id: string): Promise<void> {
    await threadsApi.remove(id);
    await load();
  }

  /** The agent a thread belongs to (its latest run's), for a link that names only the thread; null when it has none. */
  async function agentOf(id: string): Promise<string | null> {
    return (await threadsApi.runs(id))[0]?.agent ?? null;
  }

  return { threads, nextCursor, error, load, loadMore, remove, agentOf };
});
