import { onBeforeUnmount, ref, type Ref } from 'vue';

/**
 * The widths the studio lays itself out for. A phone shows one pane at a time; below `roomy` the header keeps the
 * views (Models, Schedules…) in its More menu as well as the account links; from `wide` everything sits in one line.
 */
export const BREAKPOINTS = { phone: 760, roomy: 1200, wide: 1600 } as const;

function matches(query: string): Ref<boolean> {
  const list = window.matchMedia(query);
  const state = ref(list.matches);
  const update = (event: MediaQueryListEvent) => (state.value = event.matches);
  list.addEventListener('change', update);
  onBeforeUnmount(() => list.removeEventListener('change', update));
  return state;
}

/** The window's size, kept current: the panes give up their saved sizes when the window has not the room. */
export function useWindowSize(): { width: Ref<number>; height: Ref<number> } {
  const width = ref(window.innerWidth);
  const height = ref(window.innerHeight);
  const update = () => {
    width.value = window.innerWidth;
    height.value = window.innerHeight;
  };
  window.addEventListener('resize', update);
  onBeforeUnmount(() => window.removeEventListener('resize', update));
  return { width, height };
}

/** Reactive: which of the layouts the window's width asks for now. */
export function useBreakpoints(): { phone: Ref<boolean>; roomy: Ref<boolean>; wide: Ref<boolean> } {
  return {
    phone: matches(`(max-width: ${BREAKPOINTS.phone}px)`),
    roomy: matches(`(min-width: ${BREAKPOINTS.roomy}px)`),
    wide: matches(`(min-width: ${BREAKPOINTS.wide}px)`),
  };
}
