import type { Page } from '@playwright/test';
import { expect, openStudio, screenshotPath, test } from './studio.fixtures';

/**
 * The graph on first view: every phase inside the canvas, and every text on the cards at least 11 px as drawn (the
 * canvas's zoom included), at the sizes people open the studio at.
 */

/** Each card's box against the canvas's, and the smallest text drawn on the cards, in screen pixels. */
function measure(page: Page) {
  return page.evaluate(() => {
    const canvas = document.querySelector('[data-testid="graph-canvas"]')!.getBoundingClientRect();
    const viewport = document.querySelector<HTMLElement>('.vue-flow__viewport')!;
    const zoom = new DOMMatrixReadOnly(getComputedStyle(viewport).transform).a;
    const cards = [...document.querySelectorAll<HTMLElement>('[data-testid^="phase-"].phase')].map((card) => {
      const box = card.getBoundingClientRect();
      const outside =
        box.left < canvas.left - 0.5 ||
        box.top < canvas.top - 0.5 ||
        box.right > canvas.right + 0.5 ||
        box.bottom > canvas.bottom + 0.5;
      return { id: card.dataset.testid!, outside };
    });
    const texts = [...document.querySelectorAll<HTMLElement>('.phase *')]
      .filter((el) => [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim()))
      .filter((el) => el.getClientRects().length > 0 && !el.closest('.visually-hidden'))
      .map((el) => ({ text: el.textContent!.trim(), px: parseFloat(getComputedStyle(el).fontSize) * zoom }));
    const smallest = texts.reduce((a, b) => (b.px < a.px ? b : a));
    return { cards, smallest: { text: smallest.text, px: Math.round(smallest.px * 10) / 10 } };
  });
}

for (const [width, height] of [
  [1440, 900],
  [1024, 768],
] as const) {
  test(`at ${width}×${height} change-review's graph fits the canvas on first view, its text at least 11 px`, async ({
    page,
  }) => {
    await page.setViewportSize({ width, height });
    await openStudio(page);
    await expect(page.getByTestId('phase-cancelled')).toBeVisible();
    // The fit follows the cards' measuring and the panes' sizing: read it once it has settled.
    await expect.poll(async () => (await measure(page)).cards.filter((c) => c.outside), { timeout: 5000 }).toEqual([]);
    const { cards, smallest } = await measure(page);
    expect(cards.map((c) => c.id).sort()).toEqual(
      ['phase-analysis', 'phase-cancelled', 'phase-gate', 'phase-intake', 'phase-output'].sort(),
    );
    expect(smallest.px, `"${smallest.text}" is drawn at ${smallest.px} px`).toBeGreaterThanOrEqual(11);
    // Nothing is hidden, so nothing is offered to show it.
    await expect(page.getByTestId('graph-whole')).toHaveCount(0);
    await page.screenshot({ path: screenshotPath(`graph-fit-${width}`) });
  });
}
