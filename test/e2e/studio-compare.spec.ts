import AxeBuilder from '@axe-core/playwright';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from '@playwright/test';
import { expect, openStudio, screenshotPath, script, startRun, test, words } from './studio.fixtures';

/**
 * Compare on a run (docs/compare.md): a change-review run in a folder, approved and published, compared on another
 * model from its status line; the comparison view shows the two runs' figures, each phase's outputs and their
 * differences, what became of the tool calls and whose decision the gate took, and nothing more is written.
 */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

async function violations(page: Page): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page }).withTags(WCAG_21_AA).analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

test('a finished run compared on another model: the dialog, then the two side by side, and nothing written', async ({
  page,
}) => {
  const folder = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-compare-'));
  try {
    await page.setViewportSize({ width: 1440, height: 900 });
    await openStudio(page);
    await page.getByTestId('run-project-path').fill(folder);
    await script(words('approve The retry keeps its backoff; one nit about the log line.'));
    // The suite's runs share one database: this test's threads are told apart by their message.
    const message = `Review the retry of failed webhooks ${randomUUID().slice(0, 8)}`;
    await startRun(page, message);
    await expect(page.getByTestId('approval-card')).toBeVisible();
    await page.getByTestId('gate-approve').click();
    await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
    expect(await fs.readdir(path.join(folder, 'reviews'))).toHaveLength(1);

    // Compare…: a labelled dialog that starts on the model picker.
    await page.getByTestId('run-compare').click();
    // The open one: the run's status line and the History tab each have theirs.
    const dialog = page.locator('[data-testid="compare-dialog"][open]');
    await expect(dialog).toBeVisible();
    await expect(page.getByTestId('compare-model')).toBeFocused();
    await expect(dialog.getByRole('heading')).toHaveText('Compare this run');
    expect(await violations(page)).toEqual([]);
    await page.screenshot({ path: screenshotPath('compare-dialog') });
    // A version the agent does not have is refused in words, and the dialog stays.
    await page.getByTestId('compare-version').fill('no-such-version');
    await page.getByTestId('compare-start').click();
    await expect(page.getByTestId('compare-error')).toHaveText('Version: no such version');
    await page.getByTestId('compare-version').fill('');
    const llama = await page
      .getByTestId('compare-model')
      .locator('option', { hasText: 'llama3.2' })
      .getAttribute('value');
    await page.getByTestId('compare-model').selectOption(llama!);
    await script(words('request-changes Please add a test for the backoff ceiling.'));
    await page.getByTestId('compare-start').click();

    // The comparison view: the two runs' figures, once the comparison has run to its end.
    const view = page.getByTestId('comparison-view');
    await expect(view).toBeVisible();
    await expect(dialog).toBeHidden();
    await expect(page.getByTestId('comparison-state')).toHaveText('The comparison completed.');
    await expect(page.getByTestId('comparison-model')).toHaveText([/fake-model/, /llama3\.2/]);
    await expect(page.getByTestId('comparison-status')).toHaveText(['completed', 'completed']);
    for (const cell of await page.getByTestId('comparison-run-time').all()) await expect(cell).not.toHaveText('—');
    const analysis = page.getByTestId('comparison-phase-analysis');
    await expect(analysis.getByTestId('comparison-output-0')).toContainText('one nit about the log line');
    await expect(analysis.getByTestId('comparison-output-1')).toContainText('add a test for the backoff ceiling');
    await page.getByTestId('comparison-diff-analysis').click();
    await expect(analysis.getByTestId('diff-counts')).toHaveText('1 line added, 1 line removed');
    // The gate took the original's approval; the publish step wrote nothing.
    await expect(page.getByTestId('comparison-decision').last()).toContainText('the original’s decision');
    expect(await fs.readdir(path.join(folder, 'reviews'))).toHaveLength(1);
    expect(await violations(page)).toEqual([]);
    await analysis.scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('compare-side-by-side') });

    // Back in the studio, the comparison's own run says what it is, and opens the view again.
    await page.getByTestId('comparison-close').click();
    await expect(view).toBeHidden();
    await page.setViewportSize({ width: 1024, height: 768 });
    // The thread list marks the comparison's thread.
    const ours = page.getByTestId('thread-item').filter({ hasText: message });
    const compared = ours.filter({ has: page.getByTestId('thread-comparison') });
    await expect(compared).toHaveCount(1);
    await compared.click();
    await expect(page.getByTestId('run-comparison-of')).toContainText('A comparison of run');
    await page.getByTestId('run-comparison-open').click();
    await expect(page.getByTestId('comparison-state')).toHaveText('The comparison completed.');
    await page.screenshot({ path: screenshotPath('compare-1024') });

    // The History tab offers the same for the run that wrote a checkpoint.
    await page.getByTestId('comparison-close').click();
    await ours.filter({ hasNot: page.getByTestId('thread-comparison') }).click();
    await page.getByTestId('tab-history').click();
    await page.getByTestId('history-checkpoint').filter({ hasText: 'after intake' }).click();
    await page.getByTestId('history-compare').click();
    await expect(dialog).toBeVisible();
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    await expect(page.getByTestId('history-compare')).toBeFocused();
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
});
