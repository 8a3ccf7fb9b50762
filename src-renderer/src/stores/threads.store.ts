import type { Thread } from '@contracts/runs';
import { defineStore } from 'pinia';
import { ref } from 'vue';
import { threadsApi } from '../api/threads.api';

const PAGE = 50;

/** Threads the caller may see, most recent first, a page at a time. */
export const useThreadsStore = defineStore('threads', () => {
  const threads = ref<Thread[]>([]);
  const nextCursor = ref<string | null>(null);

  /** Reloads from the top, keeping as many threads as were shown. */
  async function load(): Promise<void> {
    const page = await threadsApi.list(Math.max(PAGE, Math.min(threads.value.length, 200)));
    threads.value = page.items;
    nextCursor.value = page.next_cursor;
  }

  async function loadMore(): Promise<void> {
    if (!nextCursor.value) return;
    const page = await threadsApi.list(PAGE, nextCursor.value);
    const seen = new Set(threads.value.map((t) => t.id));
    threads.value.push(...page.items.filter((t) => !seen.has(t.id)));
    nextCursor.value = page.next_cursor;
  }

  async function remove(id: string): Promise<void> {
    await threadsApi.remove(id);
    await load();
  }

  return { threads, nextCursor, load, loadMore, remove };
});
