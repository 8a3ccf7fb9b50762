import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, openStudio, screenshotPath, script, startRun, test, words } from './studio.fixtures';

/** No part of the page is past the window's right edge: nothing to scroll sideways to. */
const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth);

/** Every control and badge of the header, with where it is drawn; hidden ones (menu items) are left out. */
async function headerBoxes(page: Page): Promise<{ name: string; left: number; right: number }[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('header.header :is(button, a, select, [data-testid])')]
      .map((el) => ({ el, box: el.getBoundingClientRect() }))
      .filter(({ box }) => box.width > 0 && box.height > 0)
      .map(({ el, box }) => ({
        name: el.dataset.testid ?? el.textContent?.trim() ?? el.tagName,
        left: box.left,
        right: box.right,
      })),
  );
}

const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
async function violations(page: Page): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page }).withTags(WCAG_21_AA).analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`));
}

test('on a phone (390×844) a run is started, followed to its gate and approved from the inbox, never sideways', async ({
  page,
}) => {
  await page.setViewportSize({ width: 390, height: 844 });
  // The studio opens on the thread list; choosing an agent shows its Run pane: the message box and the canvas.
  await openStudio(page);
  await expect(page.getByTestId('pane-run')).toHaveAttribute('aria-pressed', 'true');
  expect(await pageWidth(page)).toBeLessThanOrEqual(390);
  expect((await page.getByTestId('run-message').boundingBox())!.width).toBeGreaterThan(300);
  expect((await page.getByTestId('graph-canvas').boundingBox())!.height).toBeGreaterThan(200);
  for (const box of await headerBoxes(page)) expect(box.right, box.name).toBeLessThanOrEqual(390);
  expect.soft(await violations(page), 'violations on the Run pane').toEqual([]);
  await page.screenshot({ path: screenshotPath('layout-390-run'), fullPage: true });

  await script(words('The rename is safe; ship it.'));
  await startRun(page, 'Review: the rename, from a phone');
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  // The pane bar counts the gates waiting (other tests' gates may wait too; this one's is picked below).
  await expect(page.getByTestId('pane-inbox')).toContainText(/Inbox\s*[1-9]/);
  expect(await pageWidth(page)).toBeLessThanOrEqual(390);

  await page.getByTestId('pane-inbox').click();
  const item = page.getByTestId('inbox-item').filter({ hasText: 'Review: the rename, from a phone' });
  await expect(item).toBeVisible();
  expect(await pageWidth(page)).toBeLessThanOrEqual(390);
  expect.soft(await violations(page), 'violations on the inbox').toEqual([]);
  await page.screenshot({ path: screenshotPath('layout-390-inbox'), fullPage: true });

  await script(words('Published.'));
  await item.getByTestId('gate-approve').click();
  await expect(item).toBeHidden();
  await page.getByTestId('pane-run').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  expect(await pageWidth(page)).toBeLessThanOrEqual(390);

  // The thread list and the details are panes of their own.
  await page.getByTestId('pane-threads').click();
  await expect(page.getByTestId('thread-item').first()).toBeVisible();
  await expect(page.getByTestId('run-message')).toBeHidden();
  await page.getByTestId('pane-details').click();
  await expect(page.getByTestId('tab-history')).toBeVisible();
  expect(await pageWidth(page)).toBeLessThanOrEqual(390);
});

for (const [width, height] of [
  [1024, 768],
  [1280, 800],
  [1440, 900],
] as const) {
  test(`at ${width}×${height} the header fits the window, its links in More, and the canvas figures are readable`, async ({
    page,
  }) => {
    await page.setViewportSize({ width, height });
    await openStudio(page);
    expect(await pageWidth(page)).toBeLessThanOrEqual(width);
    const boxes = await headerBoxes(page);
    expect(boxes.map((b) => b.name)).toEqual(expect.arrayContaining(['runtime-status', 'queue-reset', 'inbox-open']));
    for (const box of boxes) {
      expect(box.left, box.name).toBeGreaterThanOrEqual(0);
      expect(box.right, box.name).toBeLessThanOrEqual(width);
    }
    // What the header has no room for is one menu away.
    await page.getByTestId('header-more').click();
    const menu = page.getByTestId('header-menu');
    await expect(menu.getByRole('menuitem', { name: 'API docs' })).toBeVisible();
    await expect(menu.getByRole('menuitem', { name: /Sign out/ })).toBeVisible();
    if (width < 1200) await expect(menu.getByRole('menuitem', { name: 'Schedules' })).toBeVisible();
    for (const box of await headerBoxes(page)) expect(box.right, box.name).toBeLessThanOrEqual(width);
    await page.keyboard.press('Escape');
    await expect(menu).toBeHidden();

    // A finished run's figures on its cards: at least 11 px tall, not shrunk with the graph.
    await script(words('Fine as it is.'));
    await startRun(page, 'Review: figures to read');
    await expect(page.getByTestId('approval-card')).toBeVisible();
    await script(words('Published.'));
    await page.getByTestId('gate-approve').click();
    await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
    const figures = page.getByTestId('phase-duration-intake');
    await expect(figures).toBeVisible();
    expect((await figures.boundingBox())!.height).toBeGreaterThanOrEqual(11);
    expect.soft(await violations(page), `violations at ${width}`).toEqual([]);
    await page.screenshot({ path: screenshotPath(`layout-${width}`) });
  });
}

test('at 1024×768 and 1440×900 the inbox and a waiting gate meet WCAG 2.1 AA', async ({ page }) => {
  for (const [width, height] of [
    [1024, 768],
    [1440, 900],
  ] as const) {
    await page.setViewportSize({ width, height });
    await openStudio(page);
    await script(words('Looks right.'));
    await startRun(page, `Review: accessible at ${width}`);
    await expect(page.getByTestId('approval-card')).toBeVisible();
    expect.soft(await violations(page), `violations at a gate, ${width}`).toEqual([]);
    await page.getByTestId('inbox-open').click();
    await expect(page.getByTestId('inbox-item').first()).toBeVisible();
    expect.soft(await violations(page), `violations in the inbox, ${width}`).toEqual([]);
    await page.screenshot({ path: screenshotPath(`layout-${width}-inbox`) });
    await page.getByTestId('inbox-close').click();
    await page.getByTestId('gate-reject').click();
    await page.getByTestId('gate-reject-submit').click();
    await expect(page.getByTestId('run-status')).toContainText('Run rejected');
  }
});
