import { PANE_SIZES_STORAGE_KEY } from '@contracts/storage';
import { defineStore } from 'pinia';
import { reactive, ref, watch } from 'vue';

export interface PaneSizes {
  left: number;
  right: number;
  bottom: number;
}

const DEFAULTS: PaneSizes = { left: 260, right: 360, bottom: 260 };
const LIMITS: Record<keyof PaneSizes, [number, number]> = { left: [180, 520], right: [260, 720], bottom: [120, 640] };

/** The pane a phone shows, one at a time: the thread list, the run (its message, canvas and output), its details. */
export type PhonePane = 'threads' | 'run' | 'details';

/**
 * Sizes of the left navigation, right inspector and bottom output, kept in local storage; and the pane a phone
 * shows.
 */
export const usePanesStore = defineStore('panes', () => {
  let saved: Partial<PaneSizes>;
  try {
    saved = JSON.parse(localStorage.getItem(PANE_SIZES_STORAGE_KEY) ?? '{}');
  } catch {
    saved = {};
  }
  const sizes = reactive<PaneSizes>({ ...DEFAULTS, ...saved });
  watch(sizes, () => localStorage.setItem(PANE_SIZES_STORAGE_KEY, JSON.stringify(sizes)), { deep: true });

  function resize(pane: keyof PaneSizes, size: number): void {
    const [min, max] = LIMITS[pane];
    sizes[pane] = Math.round(Math.min(max, Math.max(min, size)));
  }

  const phonePane = ref<PhonePane>('threads');

  return { sizes, resize, phonePane };
});
