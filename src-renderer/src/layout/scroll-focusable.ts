import type { Directive } from 'vue';

/**
 * `v-scroll-focusable`: a box whose content scrolls inside it (a long output under a max-height, a wide code block)
 * takes a place in the tab order, so that a keyboard can scroll it (WCAG 2.1.1; axe's scrollable-region-focusable);
 * one whose content fits takes none, and adds no stop on the way to the buttons after it. The element and the code
 * blocks in it (rendered Markdown) are looked at again whenever their content or size changes (a streamed output).
 */
const watchers = new WeakMap<HTMLElement, { resize: ResizeObserver; mutation: MutationObserver }>();

function scrolls(box: HTMLElement): boolean {
  return box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1;
}

function mark(el: HTMLElement): void {
  for (const box of [el, ...el.querySelectorAll<HTMLElement>('pre')]) {
    if (scrolls(box)) box.tabIndex = 0;
    else box.removeAttribute('tabindex');
  }
}

export const vScrollFocusable: Directive<HTMLElement> = {
  mounted(el) {
    mark(el);
    const resize = new ResizeObserver(() => mark(el));
    resize.observe(el);
    const mutation = new MutationObserver(() => mark(el));
    mutation.observe(el, { childList: true, subtree: true, characterData: true });
    watchers.set(el, { resize, mutation });
  },
  unmounted(el) {
    const watcher = watchers.get(el);
    watcher?.resize.disconnect();
    watcher?.mutation.disconnect();
    watchers.delete(el);
  },
};
