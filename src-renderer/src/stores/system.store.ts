import type { Health } from '@contracts/health';
import type { Models, QueueStatus } from '@contracts/models';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { healthApi, modelsApi, queueApi } from '../api/resources.api';

/** Header state: the local runtime, the models to choose from, and the queue. */
export const useSystemStore = defineStore('system', () => {
  const health = ref<Health | null>(null);
  const models = ref<Models | null>(null);
  const queue = ref<QueueStatus | null>(null);
  let timer: ReturnType<typeof setInterval> | undefined;

  const runtimeOnline = computed(() => health.value?.local_runtime.reachable ?? false);
  const queueLevel = computed<'idle' | 'busy' | 'waiting'>(() =>
    !queue.value ? 'idle' : queue.value.waiting > 0 ? 'waiting' : queue.value.active > 0 ? 'busy' : 'idle',
  );
  const modelChoices = computed(() =>
    (models.value?.providers ?? []).filter((p) => p.configured).flatMap((p) => p.models.map((m) => ({ id: m.id, provider: p.name }))),
  );

  async function refresh(): Promise<void> {
    const [h, q] = await Promise.allSettled([healthApi.get(), queueApi.status()]);
    if (h.status === 'fulfilled') health.value = h.value;
    if (q.status === 'fulfilled') queue.value = q.value;
  }

  async function loadModels(): Promise<void> {
    models.value = await modelsApi.list();
  }

  async function resetQueue(): Promise<void> {
    queue.value = await queueApi.reset('reset from the studio');
  }

  function poll(everyMs = 2000): void {
    clearInterval(timer);
    void refresh();
    timer = setInterval(() => void refresh(), everyMs);
  }

  return { health, models, queue, runtimeOnline, queueLevel, modelChoices, refresh, loadModels, resetQueue, poll };
});
