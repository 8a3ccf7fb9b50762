import { expect, test } from './studio.fixtures';
import { openStudio, screenshotPath as shot } from './studio.fixtures';

/** The stand-in's models before these tests change them. */
const MODELS = ['fake-model', 'llama3.2'];

/** Scripts the stand-in runtime over HTTP: its models, and the pace of its pull stream. */
async function scriptRuntime(script: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${process.env.E2E_MODEL_URL}/__script`, { method: 'POST', body: JSON.stringify(script) });
  expect(res.ok).toBe(true);
}

test.afterEach(async () => {
  await scriptRuntime({ models: MODELS, pull: { steps: 4, paceMs: 0 } });
});

test('the missing default model is pulled from its warning, with a bar that follows the runtime, across a reload', async ({
  page,
}) => {
  await scriptRuntime({ models: ['other-model', 'llama3.2'], pull: { steps: 25, paceMs: 150 } });
  await openStudio(page, 'repo-summary');
  await expect(page.getByTestId('default-model-missing')).toBeVisible();
  await page.getByTestId('default-model-pull').click();

  await expect(page.getByTestId('models-view')).toBeVisible();
  const active = page.getByTestId('pull-active').filter({ hasText: 'fake-model' });
  await expect(active).toBeVisible();
  const percent = async () => Number((await active.getByTestId('pull-percent').textContent())!.replace('%', ''));
  await expect.poll(percent).toBeGreaterThan(0);
  const before = await percent();
  await expect.poll(percent).toBeGreaterThan(before);
  await page.screenshot({ path: shot('models-pulling') });

  // A reload midway: the view opens again and the pull, kept by the server, goes on to its end.
  await page.reload();
  await expect(page.getByTestId('models-view')).toBeVisible();
  const again = page.getByTestId('pull-active').filter({ hasText: 'fake-model' });
  await expect(again).toBeVisible();
  expect(Number((await again.getByTestId('pull-percent').textContent())!.replace('%', ''))).toBeGreaterThanOrEqual(
    before,
  );
  await expect(page.getByTestId('pull-finished').filter({ hasText: 'fake-model: pulled' })).toBeVisible({
    timeout: 20_000,
  });
  const row = page.getByTestId('model-row').filter({ hasText: 'fake-model' });
  await expect(row).toBeVisible();
  await expect(row.getByTestId('model-default')).toBeVisible();
  await expect(row).toContainText('llama · 3.2B · Q4_K_M');
  await page.screenshot({ path: shot('models-pulled') });

  // The run form's warning is gone: the default can run.
  await page.getByTestId('models-close').click();
  await expect(page.getByTestId('default-model-missing')).toBeHidden();
});

test('a pull is cancelled, a model is deleted after confirming, and another made the default', async ({ page }) => {
  await scriptRuntime({ models: ['fake-model', 'llama3.2', 'old-model'], pull: { steps: 200, paceMs: 100 } });
  await openStudio(page, 'repo-summary');
  await page.getByTestId('models-open').click();
  await expect(page.getByTestId('models-table')).toBeVisible();

  await page.getByTestId('pull-name').fill('qwen3:0.6b');
  await page.getByTestId('pull-submit').click();
  const active = page.getByTestId('pull-active').filter({ hasText: 'qwen3:0.6b' });
  await expect(active).toBeVisible();
  await active.getByTestId('pull-cancel').click();
  await expect(page.getByTestId('pull-finished').filter({ hasText: 'qwen3:0.6b: cancelled' })).toBeVisible();
  await expect(page.getByTestId('model-row').filter({ hasText: 'qwen3:0.6b' })).toHaveCount(0);

  const old = page.getByTestId('model-row').filter({ hasText: 'old-model' });
  // Dismissed first: nothing is deleted without a yes.
  page.once('dialog', (dialog) => void dialog.dismiss());
  await old.getByTestId('model-delete').click();
  await expect(old).toBeVisible();
  page.once('dialog', (dialog) => {
    expect(dialog.message()).toContain('Delete old-model');
    void dialog.accept();
  });
  await old.getByTestId('model-delete').click();
  await expect(old).toHaveCount(0);

  const llama = page.getByTestId('model-row').filter({ hasText: 'llama3.2' });
  await llama.getByTestId('model-make-default').click();
  await expect(llama.getByTestId('model-default')).toBeVisible();
  await page.screenshot({ path: shot('models-view') });
  await llama.getByTestId('model-make-default').waitFor({ state: 'detached' });
  await page.getByTestId('model-row').filter({ hasText: 'fake-model' }).getByTestId('model-make-default').click();
  await expect(
    page.getByTestId('model-row').filter({ hasText: 'fake-model' }).getByTestId('model-default'),
  ).toBeVisible();
});
