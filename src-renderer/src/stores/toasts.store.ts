import { defineStore } from 'pinia';
import { ref } from 'vue';

export interface Toast {
  id: number;
  text: string;
  ok: boolean;
  /** A way back, e.g. Undo: offered while the toast shows. */
  action?: { label: string; run: () => Promise<void> | void };
}

/** What keeps a toast on screen: the pointer over it, the keyboard's focus in it. */
export type ToastHold = 'hover' | 'focus';

/**
 * How long a toast stays once nobody is on it: long enough to read it and reach its Undo from the keyboard. While the
 * pointer is over it or focus is in it, it stays; the time starts again when both have left.
 */
const TOAST_MS = 10_000;

/** Short notes on what an action did, shown at the foot of the window and read out by screen readers. */
export const useToastsStore = defineStore('toasts', () => {
  const toasts = ref<Toast[]>([]);
  let next = 1;
  const timers = new Map<number, ReturnType<typeof setTimeout>>();
  const holds = new Map<number, Set<ToastHold>>();

  function dismiss(id: number): void {
    clearTimeout(timers.get(id));
    timers.delete(id);
    holds.delete(id);
    toasts.value = toasts.value.filter((t) => t.id !== id);
  }

  function countDown(id: number): void {
    clearTimeout(timers.get(id));
    timers.set(
      id,
      setTimeout(() => dismiss(id), TOAST_MS),
    );
  }

  function show(text: string, options: { ok?: boolean; action?: Toast['action'] } = {}): number {
    const id = next++;
    toasts.value = [...toasts.value, { id, text, ok: options.ok ?? true, action: options.action }];
    countDown(id);
    return id;
  }

  /** The pointer or the focus reached the toast: it stays until both have left. */
  function hold(id: number, by: ToastHold): void {
    if (!toasts.value.some((t) => t.id === id)) return;
    holds.set(id, (holds.get(id) ?? new Set()).add(by));
    clearTimeout(timers.get(id));
    timers.delete(id);
  }

  function release(id: number, by: ToastHold): void {
    const held = holds.get(id);
    if (!held?.delete(by) || held.size > 0) return;
    countDown(id);
  }

  /** Runs the toast's action once, and the toast goes. */
  async function act(toast: Toast): Promise<void> {
    dismiss(toast.id);
    await toast.action?.run();
  }

  return { toasts, show, dismiss, act, hold, release };
});
