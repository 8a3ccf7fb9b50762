import { expect, openStudio, test } from './studio.fixtures';

test('Settings appear only inside the desktop app, which provides window.desktop', async ({ page }) => {
  await openStudio(page);
  await expect(page.getByTestId('settings-open')).toHaveCount(0);

  // A stand-in for the preload bridge: the studio only decides whether to offer the desktop settings.
  await page.addInitScript(() => {
    const pending = () => new Promise(() => undefined);
    Object.defineProperty(window, 'desktop', { value: new Proxy({}, { get: () => pending }) });
  });
  await page.reload();
  await page.getByTestId('settings-open').click();
  await expect(page.getByRole('dialog', { name: 'Settings' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog', { name: 'Settings' })).toBeHidden();
});
