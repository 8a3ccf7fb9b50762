import { nextTick } from 'vue';

/**
 * Moves the keyboard's focus, once the screen has been redrawn, so that a decision or a closed form leaves focus on
 * the next thing to do rather than on the page's body. Several selectors are tried in their order, each a preference
 * over the next: one selector list would take whichever match comes first in the page (a heading above a button).
 */
export async function focusSoon(
  selectors: string | readonly string[],
  within: ParentNode = document,
): Promise<boolean> {
  await nextTick();
  for (const selector of typeof selectors === 'string' ? [selectors] : selectors) {
    const target = within.querySelector<HTMLElement>(selector);
    if (target) {
      target.focus();
      return true;
    }
  }
  return false;
}

/** The first decision a person can take in a part of the studio: a gate's or a tool call's Approve. */
export const FIRST_APPROVE = ':is([data-testid="gate-approve"], [data-testid="tool-approve"]):not(:disabled)';
