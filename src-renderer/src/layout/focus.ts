import { nextTick } from 'vue';

/**
 * Moves the keyboard's focus to the first element the selector finds once the screen has been redrawn, so that a
 * decision or a closed form leaves focus on the next thing to do rather than on the page's body.
 */
export async function focusSoon(selector: string, within: ParentNode = document): Promise<boolean> {
  await nextTick();
  const target = within.querySelector<HTMLElement>(selector);
  target?.focus();
  return target !== null;
}
