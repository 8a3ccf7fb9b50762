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

/** The clock every relative time on screen reads ("3 min ago"): one timer, running while any of them is shown. */
const shared = ref(Date.now());
let readers = 0;
let sharedTimer: ReturnType<typeof setInterval> | undefined;
const SHARED_EVERY_MS = 15_000;

export function useSharedNow(): Ref<number> {
  // A moment shown for the first time is read against the time now, not the last tick's (up to 15 s old).
  shared.value = Date.now();
  if (readers++ === 0) sharedTimer = setInterval(() => (shared.value = Date.now()), SHARED_EVERY_MS);
  onBeforeUnmount(() => {
    if (--readers === 0) clearInterval(sharedTimer);
  });
  return shared;
}
