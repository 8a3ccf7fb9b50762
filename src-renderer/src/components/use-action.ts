import { errorMessage } from '@contracts/errors';
import { ref, type Ref } from 'vue';

export interface Action {
  /** True while an action runs: its buttons wait. */
  busy: Ref<boolean>;
  /** Why the last action failed, in the server's words; null once one succeeds. */
  error: Ref<string | null>;
  /** Runs `work`, never throwing: a failure is kept in `error`, where the form shows it. */
  act(work: () => Promise<void>): Promise<void>;
}

/** What a settings form does with each of its actions (load, save, revoke, …): one at a time, a failure shown. */
export function useAction(): Action {
  const busy = ref(false);
  const error = ref<string | null>(null);
  async function act(work: () => Promise<void>): Promise<void> {
    busy.value = true;
    try {
      await work();
      error.value = null;
    } catch (e) {
      error.value = errorMessage(e);
    } finally {
      busy.value = false;
    }
  }
  return { busy, error, act };
}
