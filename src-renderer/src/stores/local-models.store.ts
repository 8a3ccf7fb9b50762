import type { LocalModels, ModelPull } from '@contracts/models';
import { errorMessage } from '@contracts/errors';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { modelsApi } from '../api/models.api';
import { useSystemStore } from './system.store';

/** The view stays open across a reload of the page, as a pull it shows goes on. */
const OPEN_KEY = 'svc.models-view-open';
/** How often the view reads the pulls while one is under way (the server keeps their progress). */
const PULL_POLL_MS = 500;

/**
 * The local runtime's models (the Models view): the list, pulls with their progress as the server keeps it (any
 * process's, any person's), deleting, and the default model.
 */
export const useLocalModelsStore = defineStore('local-models', () => {
  const system = useSystemStore();
  const data = ref<LocalModels | null>(null);
  const error = ref<string | null>(null);
  const open = ref(sessionStorage.getItem(OPEN_KEY) === 'true');
  let timer: ReturnType<typeof setTimeout> | undefined;

  const pulling = computed<ModelPull[]>(() => (data.value?.pulls ?? []).filter((p) => p.status === 'pulling'));

  async function load(): Promise<void> {
    const hadPulls = pulling.value.length > 0;
    try {
      data.value = await modelsApi.local();
      error.value = null;
    } catch (e) {
      error.value = `The models could not be loaded: ${errorMessage(e)}`;
    }
    // A pull that just ended changed what runs may use: the run form's list and its warning follow.
    if (hadPulls && pulling.value.length === 0) void system.loadModels();
    clearTimeout(timer);
    if (pulling.value.length > 0) timer = setTimeout(() => void load(), PULL_POLL_MS);
  }

  function show(visible = true): void {
    open.value = visible;
    sessionStorage.setItem(OPEN_KEY, String(visible));
    if (visible) void load();
  }

  /** Runs an action, then reloads; a failure is said in the view. */
  async function act(action: () => Promise<unknown>): Promise<boolean> {
    try {
      await action();
      error.value = null;
      return true;
    } catch (e) {
      error.value = errorMessage(e);
      return false;
    } finally {
      await load();
    }
  }

  return {
    data,
    error,
    open,
    pulling,
    load,
    show,
    pull: (name: string) => act(() => modelsApi.pull(name.trim())),
    cancel: (id: string) => act(() => modelsApi.cancelPull(id)),
    remove: (name: string) => act(() => modelsApi.remove(name)),
    setDefault: async (model: string) => {
      if (await act(() => modelsApi.setDefault(model))) await system.loadModels();
    },
  };
});
