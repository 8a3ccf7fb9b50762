import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import { api, expect, fromHeader, openStudio, screenshotPath, test } from './studio.fixtures';

/**
 * Settings → Folders: the administrator registers a folder under the server's roots to the organisation chosen in the
 * switcher, sees it listed, and removes it; the server's refusal of a folder outside the roots is shown as it said it.
 */
test("Settings → Folders: an organisation's administrator registers a folder, and removes it", async ({ page }) => {
  const folder = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-folder-')));
  try {
    await openStudio(page);
    await fromHeader(page, 'settings-open');
    const section = page.getByRole('dialog', { name: 'Settings' }).getByRole('region', { name: /Folders of/ });
    await expect(section.getByTestId('org-folders-none')).toBeVisible();

    const input = section.getByLabel('Folder to register');
    await input.fill('/etc');
    await section.getByRole('button', { name: 'Register folder' }).click();
    await expect(section.getByRole('alert')).toContainText('is outside the allowed folders (PROJECT_ROOTS:');

    await input.fill(folder);
    await section.getByRole('button', { name: 'Register folder' }).click();
    await expect(section.getByTestId('org-folder')).toContainText(folder);
    await expect(section.getByRole('alert')).toHaveCount(0);
    const listed = (await (await api(`/orgs/${DEFAULT_ORG_ID}/folders`)).json()) as { path: string }[];
    expect(listed.map((f) => f.path)).toEqual([folder]);
    await section.screenshot({ path: screenshotPath('org-folders') });
    const axe = await new AxeBuilder({ page })
      .include('[data-testid="org-folders"]')
      .withTags(['wcag2a', 'wcag2aa'])
      .analyze();
    expect(axe.violations.map((v) => v.id)).toEqual([]);

    await section.getByRole('button', { name: `Remove ${folder}` }).click();
    await expect(section.getByTestId('org-folders-none')).toBeVisible();
    expect(await (await api(`/orgs/${DEFAULT_ORG_ID}/folders`)).json()).toEqual([]);
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
});
