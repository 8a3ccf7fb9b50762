import { onBeforeUnmount, ref, type Ref } from 'vue';

/**
 * The time now, refreshed every `everyMs` while the component using it is mounted: for texts such as "waiting
 * 12 min" and "expires in 25 min", which change with the clock, not with the data.
 */
export function useNow(everyMs = 15_000): Ref<number> {
  const now = ref(Date.now());
  const timer = setInterval(() => (now.value = Date.now()), everyMs);
  onBeforeUnmount(() => clearInterval(timer));
  return now;
}
