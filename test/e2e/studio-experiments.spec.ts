import AxeBuilder from '@axe-core/playwright';
import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import {
  expect,
  fromHeader,
  openStudio,
  screenshotPath,
  script,
  scriptByModel,
  startRun,
  test,
  words,
} from './studio.fixtures';

/**
 * Datasets and experiments (docs/compare.md): finished change-review runs added to a new dataset from their status
 * line; the dataset's items in the Datasets view, one's expected output and checks changed; an experiment on the
 * default model followed by its progress bar to its results, a second on llama3.2 that answers otherwise, the two
 * compared with the item that changed marked, and the chart of pass rate against cost and time.
 */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

async function violations(page: Page): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page }).withTags(WCAG_21_AA).analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

/** The value of a select's option whose text holds `text`. */
async function optionValue(page: Page, testId: string, text: string): Promise<string> {
  const value = await page.getByTestId(testId).locator('option', { hasText: text }).first().getAttribute('value');
  expect(value, `an option "${text}" in ${testId}`).not.toBeNull();
  return value!;
}

/** A change-review run approved at its gate to its end, then added to the dataset (a new one when `newName`). */
async function runIntoDataset(page: Page, message: string, dataset: { newName?: string; marker: string }) {
  await startRun(page, message);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');

  await page.getByTestId('run-add-to-dataset').click();
  const dialog = page.locator('[data-testid="add-to-dataset-dialog"][open]');
  await expect(dialog).toBeVisible();
  await expect(page.getByTestId('add-to-dataset-choice')).toBeFocused();
  await expect(page.getByTestId('add-to-dataset-choice')).toBeEnabled();
  if (dataset.newName) {
    await page.getByTestId('add-to-dataset-choice').selectOption('');
    await page.getByTestId('add-to-dataset-name').fill(dataset.newName);
  } else {
    await page
      .getByTestId('add-to-dataset-choice')
      .selectOption(await optionValue(page, 'add-to-dataset-choice', dataset.marker));
  }
  await page.getByTestId('add-to-dataset-add').click();
  await expect(dialog).toBeHidden();
}

test('runs added to a dataset, its items edited, two experiments run, compared and charted', async ({ page }) => {
  test.setTimeout(240_000);
  // The suite's runs share one database: this test's dataset and threads are told apart by a marker.
  const marker = randomUUID().slice(0, 8);
  const datasetName = `Retries ${marker}`;
  const approve = words(`approve The retry keeps its backoff; ship it. ${marker}`);
  try {
    await page.setViewportSize({ width: 1440, height: 900 });
    await openStudio(page);
    await script(approve);

    // Three finished runs, each added from its status line: the first makes the dataset, the others join it.
    await runIntoDataset(page, `Review the webhook retry ${marker} (1)`, { newName: datasetName, marker });
    await expect(page.getByTestId('toast').filter({ hasText: datasetName })).toContainText(
      `Added to ${datasetName} as item 1`,
    );
    expect(await violations(page), 'violations on the run with its Add to dataset').toEqual([]);
    await runIntoDataset(page, `Review the webhook retry ${marker} (2)`, { marker });
    // Escape closes the dialog onto the button that opened it, adding nothing.
    await page.getByTestId('run-add-to-dataset').click();
    await expect(page.getByTestId('add-to-dataset-choice')).toBeFocused();
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('add-to-dataset-dialog')).toBeHidden();
    await expect(page.getByTestId('run-add-to-dataset')).toBeFocused();
    await runIntoDataset(page, `Review the webhook retry ${marker} (3)`, { marker });
    await expect(page.getByTestId('toast').filter({ hasText: 'as item 3' })).toBeVisible();

    // The Datasets view: the new dataset with its three items, each from its run.
    await fromHeader(page, 'datasets-open');
    const view = page.getByTestId('datasets-view');
    await expect(view).toBeVisible();
    const row = page.getByTestId('dataset-row').filter({ hasText: datasetName });
    await expect(row.getByTestId('dataset-item-count')).toHaveText('3');
    await row.getByTestId('dataset-open').click();
    await expect(page.getByTestId('dataset-title')).toHaveText(datasetName);
    const items = page.getByTestId('dataset-item');
    await expect(items).toHaveCount(3);
    for (const [at, item] of (await items.all()).entries()) {
      await expect(item.getByTestId('dataset-item-message-text')).toHaveText(
        `Review the webhook retry ${marker} (${at + 1})`,
      );
      await expect(item.getByTestId('dataset-item-source')).toContainText('from run');
    }

    // The second item's expected output and a check of its own.
    const second = items.filter({ hasText: `${marker} (2)` });
    await second.getByTestId('dataset-item-edit').click();
    const form = page.getByTestId('dataset-item-form');
    await expect(form.getByTestId('dataset-item-expected')).toBeFocused();
    await form.getByTestId('dataset-item-expected').fill(`approve: the backoff is kept. ${marker}`);
    await form.getByTestId('check-add').click();
    await expect(form.getByTestId('check-kind')).toBeFocused();
    // An empty check is refused in words, beside its field.
    await form.getByTestId('dataset-item-save').click();
    await expect(form.getByTestId('check-problems')).toHaveText('Text must not be empty');
    await form.getByTestId('check-text').fill('approve');
    await form.getByTestId('dataset-item-save').click();
    await expect(form).toBeHidden();
    await expect(second.getByTestId('dataset-item-expected-text')).toHaveText(
      `approve: the backoff is kept. ${marker}`,
    );
    await expect(second.getByTestId('check-chip')).toHaveText('contains "approve"');
    await expect(second.getByTestId('dataset-item-edit')).toBeFocused();
    expect(await violations(page), 'violations on the dataset').toEqual([]);
    await page.screenshot({ path: screenshotPath('datasets-view') });

    // An experiment on the default model, with a check of its own on every item, followed by its progress bar.
    // The tabs are one Tab stop; the arrows move between them.
    await page.getByTestId('dataset-tab-items').focus();
    await page.keyboard.press('ArrowRight');
    await expect(page.getByTestId('dataset-tab-experiments')).toBeFocused();
    await expect(page.getByTestId('dataset-tab-experiments')).toHaveAttribute('aria-selected', 'true');
    await expect(page.getByTestId('experiments-empty')).toBeVisible();
    await page.getByTestId('experiment-new').click();
    await expect(page.getByTestId('experiment-agent')).toBeFocused();
    await page.getByTestId('experiment-agent').selectOption('change-review');
    await page
      .getByTestId('experiment-model-choice')
      .selectOption(await optionValue(page, 'experiment-model-choice', 'fake-model'));
    const experimentForm = page.getByTestId('experiment-form');
    await experimentForm.getByTestId('check-add').click();
    await experimentForm.getByTestId('check-kind').selectOption('not_contains');
    await experimentForm.getByTestId('check-text').fill('FORBIDDEN');
    await experimentForm.getByTestId('check-name').fill('no forbidden word');
    expect(await violations(page), 'violations on the experiment form').toEqual([]);
    // Slow enough answers for the progress bar to be seen.
    await script(approve, 120);
    await page.getByTestId('experiment-start').click();
    const results = page.getByTestId('experiment-results');
    await expect(results.getByTestId('experiment-progress')).toBeVisible();
    await expect(results.getByRole('progressbar', { name: /Running: \d of 3 items done/ })).toBeVisible();
    await expect(results).toHaveAttribute('data-status', 'completed', { timeout: 120_000 });
    await script(approve);
    await expect(results.getByTestId('experiment-state')).toHaveText('Completed: 3 items.');
    const resultRows = results.getByTestId('experiment-item');
    await expect(resultRows).toHaveCount(3);
    for (const item of await resultRows.all()) {
      await expect(item.getByTestId('experiment-item-status')).toContainText('done');
      await expect(item.getByTestId('experiment-item-output')).toContainText(marker);
    }
    // Each item's checks say pass or fail in words; the second has its own check too.
    const secondResult = resultRows.filter({ hasText: `${marker} (2)` });
    await expect(secondResult.getByTestId('experiment-score')).toHaveCount(2);
    await expect(secondResult.getByTestId('experiment-score').filter({ hasText: 'approve' })).toContainText('✓ pass');
    await expect(secondResult.getByTestId('experiment-score').filter({ hasText: 'no forbidden word' })).toContainText(
      '✓ pass',
    );
    await expect(results.getByTestId('experiment-pass-rate')).toHaveText('100%');
    await expect(results.getByTestId('experiment-run-time')).not.toHaveText('—');
    await expect(results.getByTestId('experiment-check-total')).toHaveCount(2);
    expect(await violations(page), 'violations on the results').toEqual([]);
    await results.scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('experiment-results') });

    // A second experiment on llama3.2, which answers otherwise: the second item's own check fails there.
    await scriptByModel({ 'llama3.2': words(`request-changes Please add a test for the ceiling. ${marker}`) });
    await page.getByTestId('experiment-new').click();
    await page
      .getByTestId('experiment-model-choice')
      .selectOption(await optionValue(page, 'experiment-model-choice', 'llama3.2'));
    await experimentForm.getByTestId('check-add').click();
    await experimentForm.getByTestId('check-kind').selectOption('not_contains');
    await experimentForm.getByTestId('check-text').fill('FORBIDDEN');
    await experimentForm.getByTestId('check-name').fill('no forbidden word');
    await page.getByTestId('experiment-start').click();
    await expect(results.getByTestId('experiment-model')).toContainText('llama3.2');
    await expect(results).toHaveAttribute('data-status', 'completed', { timeout: 120_000 });
    await expect(secondResult.getByTestId('experiment-score').filter({ hasText: 'approve' })).toContainText('✕ fail');
    await expect(page.getByTestId('experiment-row')).toHaveCount(2);

    // The two compared: the second item went from pass to fail, marked by a word as well as a colour.
    await expect(page.getByTestId('experiment-compare-other')).toHaveValue(
      (await page.getByTestId('experiment-row').first().getAttribute('data-experiment'))!,
    );
    await page.getByTestId('experiment-compare-start').click();
    const compared = page.getByTestId('experiment-comparison-item');
    await expect(compared).toHaveCount(3);
    const flipped = compared.filter({ hasText: `${marker} (2)` });
    await expect(flipped).toHaveAttribute('data-flipped', 'true');
    await expect(flipped).toHaveClass(/flipped/);
    await expect(flipped.getByTestId('experiment-comparison-changed')).toHaveText('changed');
    await expect(flipped).toContainText('pass → fail');
    await expect(compared.filter({ hasText: `${marker} (1)` })).toHaveAttribute('data-flipped', 'false');
    await expect(page.getByTestId('experiment-flips-pass-to-fail')).toHaveText('1 pass → fail');
    await expect(page.getByTestId('experiment-flips-fail-to-pass')).toHaveText('0 fail → pass');

    // The chart: a point per experiment against run time, labelled with its model; its figures in a table.
    const chart = page.getByTestId('experiment-chart');
    await expect(chart).toBeVisible();
    await expect(chart.getByTestId('experiment-chart-run_ms').getByTestId('experiment-chart-point')).toHaveCount(2);
    await expect(chart.getByTestId('experiment-chart-run_ms')).toContainText('llama3.2');
    await expect(chart.getByTestId('experiment-chart-run_ms')).toContainText('fake-model');
    await expect(chart.getByTestId('experiment-chart-table').locator('tbody tr')).toHaveCount(2);
    expect(await violations(page), 'violations on the comparison and the chart').toEqual([]);
    await page.getByTestId('experiment-compare').scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('experiment-comparison') });
    await chart.scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('experiment-chart') });

    // At 1024 px the view fits the window: nothing to scroll sideways to.
    await page.setViewportSize({ width: 1024, height: 768 });
    await expect(chart).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1024);
    expect(await violations(page), 'violations at 1024').toEqual([]);
    await page.screenshot({ path: screenshotPath('experiment-1024') });

    // A third, slow to answer, cancelled while it runs: it says so, and the items not yet scored failed.
    await page.setViewportSize({ width: 1440, height: 900 });
    await script(words(`approve slowly ${marker}`), 400);
    await page.getByTestId('experiment-new').click();
    await page
      .getByTestId('experiment-model-choice')
      .selectOption(await optionValue(page, 'experiment-model-choice', 'fake-model'));
    await page.getByTestId('experiment-start').click();
    const newest = page.getByTestId('experiment-row').first();
    await expect(newest).toHaveAttribute('data-status', 'running');
    await newest.getByTestId('experiment-cancel').click();
    await expect(newest).toHaveAttribute('data-status', 'cancelled');
    await expect(newest.getByTestId('experiment-cancel')).toHaveCount(0);
    await script(approve);

    // Back to the studio with Escape; the header's entry opens the view again where it was.
    await page.keyboard.press('Escape');
    await expect(view).toBeHidden();
    await fromHeader(page, 'datasets-open');
    await expect(page.getByTestId('dataset-title')).toHaveText(datasetName);
  } finally {
    await scriptByModel({});
  }
});
