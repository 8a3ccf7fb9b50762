import type { Thread } from '@contracts/runs';
import { defineStore } from 'pinia';
import { ref } from 'vue';
import { threadsApi } from '../api/resources.api';

export const useThreadsStore = defineStore('threads', () => {
  const threads = ref<Thread[]>([]);

  async function load(): Promise<void> {
    threads.value = (await threadsApi.list()).items;
  }

  async function remove(id: string): Promise<void> {
    await threadsApi.remove(id);
    await load();
  }

  return { threads, load, remove };
});
