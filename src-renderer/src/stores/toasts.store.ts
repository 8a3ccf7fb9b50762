import { defineStore } from 'pinia';
import { ref } from 'vue';

export interface Toast {
  id: number;
  text: string;
  ok: boolean;
  /** A way back, e.g. Undo: offered while the toast shows. */
  action?: { label: string; run: () => Promise<void> | void };
}

/** How long a toast stays: long enough to read it and reach its Undo from the keyboard. */
const TOAST_MS = 10_000;

/** Short notes on what an action did, shown at the foot of the window and read out by screen readers. */
export const useToastsStore = defineStore('toasts', () => {
  const toasts = ref<Toast[]>([]);
  let next = 1;
  const timers = new Map<number, ReturnType<typeof setTimeout>>();

  function dismiss(id: number): void {
    clearTimeout(timers.get(id));
    timers.delete(id);
    toasts.value = toasts.value.filter((t) => t.id !== id);
  }

  function show(text: string, options: { ok?: boolean; action?: Toast['action'] } = {}): number {
    const id = next++;
    toasts.value = [...toasts.value, { id, text, ok: options.ok ?? true, action: options.action }];
    timers.set(
      id,
      setTimeout(() => dismiss(id), TOAST_MS),
    );
    return id;
  }

  /** Runs the toast's action once, and the toast goes. */
  async function act(toast: Toast): Promise<void> {
    dismiss(toast.id);
    await toast.action?.run();
  }

  return { toasts, show, dismiss, act };
});
