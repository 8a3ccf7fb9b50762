import type { RunDetail } from '../../src-server/contracts/runs';
import type { UsageReport } from '../../src-server/contracts/usage';
import { formatCost } from '../../src-renderer/src/stores/usage-figures';
import { api, completeRun, expect, openStudio, screenshotPath as shot, test } from './studio.fixtures';

/**
 * The usage accounting in the studio: a run's cost line and its tokens, cost and time per phase (the State tab), and
 * the Usage view's charts and table, at a desktop's width and a phone's. The e2e server prices the stand-in's
 * `fake-model` (global-setup.ts) and not `llama3.2`.
 */

async function detail(runId: string): Promise<RunDetail> {
  const res = await api(`/runs/${runId}`);
  expect(res.status).toBe(200);
  return (await res.json()) as RunDetail;
}

test("a run shows its cost, and its tokens, cost and time per phase; an unpriced model's run says cost unknown", async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openStudio(page, 'repo-summary');
  const runId = (await completeRun(page, 'Summarise the loader', 'The loader reads the settings once.'))!;
  await page.getByTestId('tab-state').click();

  const stored = await detail(runId);
  const usage = stored.usage!;
  expect(usage.calls).toBe(3);
  expect(usage.cost_usd).toBeGreaterThan(0);
  // Beside the run's status, and in the State tab with the run's calls and tokens.
  await expect(page.getByTestId('run-cost')).toHaveText(formatCost(usage.cost_usd));
  const cost = page.getByTestId('state-cost');
  await expect(cost).toContainText(formatCost(usage.cost_usd));
  await expect(cost).toContainText('3 model calls');
  for (const p of usage.phases) {
    const row = page.getByTestId(`state-phase-usage-${p.phase}`);
    await expect(row).toContainText(`${p.input_tokens.toLocaleString('en')} / ${p.output_tokens.toLocaleString('en')}`);
    await expect(row).toContainText(formatCost(p.cost_usd));
  }
  await expect(page.getByTestId('state-phase-usage').locator('tbody tr')).toHaveCount(3);
  await page.getByTestId('state-tab').screenshot({ path: shot('usage-run-cost') });
  await page.screenshot({ path: shot('usage-run-cost-studio') });

  // The same command on a model the price table does not name: its cost is unknown, never $0.
  await page.getByTestId('run-model').selectOption('llama3.2');
  await completeRun(page, 'Summarise it on another model', 'It reads them once.');
  await page.getByTestId('tab-state').click();
  await expect(page.getByTestId('run-cost')).toHaveText('cost unknown');
  await expect(page.getByTestId('state-cost')).toContainText('cost unknown');
  await expect(page.getByTestId('state-phase-usage-dispatch')).toContainText('cost unknown');
  await page.getByTestId('state-tab').screenshot({ path: shot('usage-run-cost-unknown') });
});

test('the Usage view charts runs, tokens, cost and latency per day by model, agent and project, with its table', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  // A run on an unpriced model, through the API: the view has both kinds to show.
  const unpriced = await api('/graphs/repo-summary/run', {
    method: 'POST',
    json: { message: 'Count this one too', model: 'llama3.2' },
  });
  expect(await unpriced.text()).toContain('run_done');
  await openStudio(page, 'repo-summary');
  await completeRun(page, 'One more to count', 'Counted.');

  await page.getByTestId('usage-open').click();
  const view = page.getByTestId('usage-view');
  await expect(view).toBeVisible();
  const report = async (groupBy: string) => {
    const res = await api(`/usage?group_by=${groupBy}`);
    return (await res.json()) as UsageReport;
  };
  // What the view shows is what the API adds up (the last 30 days, by model at first).
  const byModel = await report('model');
  await expect(page.getByTestId('usage-total-calls')).toHaveText(byModel.total.calls.toLocaleString('en'));
  await expect(page.getByTestId('usage-total-cost')).toHaveText(
    formatCost(byModel.total.cost_usd, byModel.total.unpriced_calls),
  );
  const fake = page.getByTestId('usage-row').filter({ hasText: 'fake-model' });
  const fakeRow = byModel.rows.find((r) => r.model === 'fake-model')!;
  await expect(fake.getByTestId('usage-row-cost')).toHaveText(formatCost(fakeRow.cost_usd, fakeRow.unpriced_calls));
  const llama = page.getByTestId('usage-row').filter({ hasText: 'llama3.2' });
  await expect(llama.getByTestId('usage-row-cost')).toHaveText('cost unknown');
  for (const measure of ['runs', 'tokens', 'cost', 'latency']) {
    await expect(page.getByTestId(`usage-chart-${measure}`).locator('canvas')).toBeVisible();
  }
  // The charts' text alternative: today's runs per model, as numbers.
  const today = new Date().toISOString().slice(0, 10);
  await page.getByTestId('usage-chart-runs').getByText('The numbers').click();
  await expect(
    page
      .getByTestId('usage-chart-table-runs')
      .locator('tbody tr')
      .filter({ has: page.locator(`time[datetime="${today}"]`) }),
  ).toBeVisible();
  await page.screenshot({ path: shot('usage-view-by-model') });
  // The table is shown whole, below the charts: its box is as tall as its rows (the view scrolls, not the box).
  const table = await page.getByTestId('usage-table').evaluate((element) => {
    const box = element.parentElement!;
    return { box: box.clientHeight, rows: element.getBoundingClientRect().height };
  });
  expect(table.box).toBeGreaterThanOrEqual(Math.floor(table.rows));

  await page.getByTestId('usage-by-agent').check();
  await expect(page.getByTestId('usage-row').filter({ hasText: 'repo-summary' })).toBeVisible();
  const byAgent = await report('agent');
  await expect(page.getByTestId('usage-row')).toHaveCount(byAgent.rows.length);
  await page.getByTestId('usage-by-project').check();
  await expect(page.getByTestId('usage-row').first()).toBeVisible();
  await page.getByTestId('usage-range').selectOption('7');
  await expect(page.getByTestId('usage-table').locator('caption')).toContainText('over the last 7 days');
  await page.screenshot({ path: shot('usage-view-by-project') });

  // A first day's calls are one bar in a range of days: the last 24 hours are drawn by the hour, this one included.
  await page.getByTestId('usage-range').selectOption({ label: 'last 24 hours' });
  await expect(page.getByTestId('usage-table').locator('caption')).toContainText('over the last 24 hours');
  // The runs were made a moment ago: in this hour, or the one before when the hour has just turned.
  const hourOf = (at: number) => `${new Date(at).toISOString().slice(0, 13)}:00Z`;
  const recent = [hourOf(Date.now()), hourOf(Date.now() - 5 * 60_000)];
  const hourTable = page.getByTestId('usage-chart-table-runs');
  if (!(await hourTable.isVisible())) await page.getByTestId('usage-chart-runs').getByText('The numbers').click();
  await expect(hourTable.locator('thead th').first()).toHaveText('Hour');
  const hoursShown = await hourTable
    .locator('tbody time')
    .evaluateAll((all) => all.map((t) => t.getAttribute('datetime')));
  expect(hoursShown.some((hour) => recent.includes(hour!))).toBe(true);
  await page.screenshot({ path: shot('usage-view-24-hours') });

  // A phone's width: the charts stack, the tables scroll on their own, the page does not scroll sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(view).toBeVisible();
  // The charts are drawn again at the new width a frame or more after the window changes: measured once settled.
  await expect
    .poll(() => page.evaluate(() => document.documentElement.scrollWidth), {
      message: 'the page scrolls sideways at 390 px',
    })
    .toBeLessThanOrEqual(390);
  const right = await page.evaluate(
    () => document.querySelector('[data-testid="usage-view"]')!.getBoundingClientRect().right,
  );
  expect(right).toBeLessThanOrEqual(390);
  const chart = await page.getByTestId('usage-chart-cost').boundingBox();
  expect(chart!.width).toBeLessThanOrEqual(390);
  await page.screenshot({ path: shot('usage-view-390'), fullPage: true });

  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.getByTestId('usage-close').click();
  await expect(view).toBeHidden();
});

test('from the Usage view, the skip link goes back to the message box, as from the other views', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  await page.getByTestId('usage-open').click();
  await expect(page.getByTestId('usage-view')).toBeVisible();
  await page.getByTestId('skip-to-message').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('usage-view')).toBeHidden();
  await expect(page.locator('#run-message')).toBeFocused();
});
