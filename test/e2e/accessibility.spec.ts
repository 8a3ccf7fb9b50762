import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { baseUrl, expect, openStudio, screenshotPath, script, startRun, test, token, words } from './studio.fixtures';

/**
 * The studio and the portal against WCAG 2.1 A and AA, as axe-core checks them in Chromium, on the screens a person
 * works in. Both have one colour scheme (light): neither styles `prefers-color-scheme: dark`.
 */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/** Each violation as one line (rule, element, axe's summary), so that a failure says what to fix and where. */
async function violations(page: Page): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page }).withTags(WCAG_21_AA).analyze();
  return found.flatMap((v) =>
    v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary?.replace(/\s+/g, ' ') ?? ''}`),
  );
}

/** Checks the screen as it is now and keeps a picture of it; every screen is checked even when one fails. */
async function check(page: Page, screen: string): Promise<void> {
  expect.soft(await violations(page), `violations on ${screen}`).toEqual([]);
  await page.screenshot({ path: screenshotPath(`a11y-${screen}`) });
}

test('the studio meets WCAG 2.1 AA: the link question, empty, at a gate, the inbox, the models, the usage, the agents, the History tab, finished, a new project', async ({
  page,
}) => {
  // Eleven screens, each a whole-page axe pass of a few seconds: more than the default minute on a busy machine.
  test.setTimeout(120_000);
  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.goto(`${baseUrl()}/ui#token=${token()}`);
  await expect(page.getByTestId('link-sign-in')).toBeVisible();
  await check(page, 'link-question');
  await page.getByTestId('link-sign-in-switch').click();

  await openStudio(page);
  await check(page, 'empty');

  await script(words('The rename is safe to ship; one nit in the loader.'));
  await startRun(page, 'Review: the rename of the config loader');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await check(page, 'gate');

  await page.getByTestId('inbox-open').click();
  await expect(page.getByTestId('inbox-item').first()).toBeVisible();
  await check(page, 'inbox');
  await page.getByTestId('inbox-close').click();

  await page.getByTestId('models-open').click();
  await expect(page.getByTestId('models-table')).toBeVisible();
  await check(page, 'models');
  await page.getByTestId('models-close').click();

  await page.getByTestId('usage-open').click();
  await expect(page.getByTestId('usage-table')).toBeVisible();
  await check(page, 'usage');
  await page.getByTestId('usage-close').click();

  // The Agents view with a built-in open in the editor: its source, its graph and the Try form.
  await page.getByTestId('agents-open').click();
  await page.getByTestId('agent-open-change-review').click();
  await expect(page.getByTestId('source-valid')).toBeVisible();
  await check(page, 'agents');
  await page.getByTestId('agents-close').click();

  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-checkpoint').first()).toBeVisible();
  await check(page, 'history');

  // Approved and finished: the completed phases, the passed gate, the run's status and the decision on record.
  await script(words('Published.'));
  await page.getByTestId('tab-approval').click();
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-decision')).toBeVisible();
  await check(page, 'finished');

  // The scope switcher's New project… form, with a missing name said beside its field.
  await page.getByTestId('project-new').click();
  await expect(page.getByTestId('new-project')).toBeVisible();
  await page.getByTestId('new-project-create').click();
  await expect(page.getByTestId('new-project-error')).not.toBeEmpty();
  await check(page, 'new-project');
  await page.keyboard.press('Escape');
});

test('the portal meets WCAG 2.1 AA', async ({ page }) => {
  await page.goto(`${baseUrl()}/`);
  await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
  expect(await violations(page)).toEqual([]);
  await page.screenshot({ path: screenshotPath('a11y-portal'), fullPage: true });
});
