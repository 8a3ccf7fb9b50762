import type { Health } from '@contracts/health';
import type { Models, QueueStatus } from '@contracts/models';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { healthApi } from '../api/health.api';
import { modelsApi } from '../api/models.api';
import { queueApi } from '../api/queue.api';
import { errorMessage } from '@contracts/errors';

/** Header state: the local runtime, the models to choose from, and the queue. */
export const useSystemStore = defineStore('system', () => {
  const health = ref<Health | null>(null);
  const models = ref<Models | null>(null);
  const queue = ref<QueueStatus | null>(null);
  /** Why the last header action failed, e.g. a queue reset the caller may not do. */
  const error = ref<string | null>(null);
  /** Why the last queue poll failed; the badge would otherwise go on showing old counts. */
  const queueError = ref<string | null>(null);
  let timer: ReturnType<typeof setInterval> | undefined;

  const runtimeOnline = computed(() => health.value?.local_runtime.reachable ?? false);
  const queueLevel = computed<'idle' | 'busy' | 'waiting'>(() =>
    !queue.value ? 'idle' : queue.value.waiting > 0 ? 'waiting' : queue.value.active > 0 ? 'busy' : 'idle',
  );
  const modelChoices = computed(() =>
    (models.value?.providers ?? [])
      .filter((p) => p.configured)
      .flatMap((p) => p.models.map((m) => ({ id: m.id, provider: p.name, context: m.context ?? null }))),
  );
  /** DEFAULT_MODEL, and whether the runtime has it (false: a run on the default would fail). */
  const defaultModel = computed(() => models.value?.default_model ?? null);

  async function refresh(): Promise<void> {
    const [h, q] = await Promise.allSettled([healthApi.get(), queueApi.status()]);
    // A server that does not answer says nothing about the runtime: show it as unreachable.
    health.value = h.status === 'fulfilled' ? h.value : null;
    if (q.status === 'fulfilled') queue.value = q.value;
    queueError.value = q.status === 'rejected' ? `Queue status failed: ${errorMessage(q.reason)}` : null;
  }

  async function loadModels(): Promise<void> {
    models.value = await modelsApi.list();
  }

  async function resetQueue(): Promise<void> {
    try {
      queue.value = await queueApi.reset('reset from the studio');
      error.value = null;
    } catch (e) {
      error.value = `Queue reset failed: ${errorMessage(e)}`;
    }
  }

  function poll(everyMs = 2000): void {
    clearInterval(timer);
    void refresh();
    timer = setInterval(() => void refresh(), everyMs);
  }

  return {
    health,
    models,
    queue,
    error,
    queueError,
    runtimeOnline,
    queueLevel,
    modelChoices,
    defaultModel,
    refresh,
    loadModels,
    resetQueue,
    poll,
  };
});
