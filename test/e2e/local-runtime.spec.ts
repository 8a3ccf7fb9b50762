import type { Page } from '@playwright/test';
import { numberedTokens } from '../fixtures/fake-models';
import { expect, test } from './studio.fixtures';
import { openStudio, screenshotPath as shot, startRun, words } from './studio.fixtures';

/** The stand-in's models before these tests add theirs. */
const MODELS = ['fake-model', 'llama3.2'];

/** Scripts the stand-in runtime over HTTP: its answer, a thinking model's reasoning, its models and their traits. */
async function scriptRuntime(script: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${process.env.E2E_MODEL_URL}/__script`, { method: 'POST', body: JSON.stringify(script) });
  expect(res.ok).toBe(true);
}

/** Opens repo-summary and picks `model` in the run form (the models are read when the studio opens). */
async function openWithModel(page: Page, model: string): Promise<void> {
  await openStudio(page, 'repo-summary');
  await page.getByTestId('run-model').selectOption(model);
}

test.afterEach(async () => {
  await scriptRuntime({ models: MODELS, tokens: ['ok'] });
});

test('a thinking model: its reasoning shows collapsed, apart from the answer, also after a reload', async ({
  page,
}) => {
  await scriptRuntime({
    models: [...MODELS, 'thinker-model'],
    thinkingModels: ['thinker-model'],
    tokens: words('The module loads the settings.'),
    thinking: words('First I weigh what the module does, then I answer.'),
    delayMs: 10,
  });
  await openWithModel(page, 'thinker-model');
  await startRun(page, 'Summarise with reasoning');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');

  const reasoning = page.getByTestId('thinking-dispatch');
  await expect(reasoning).toBeVisible();
  await expect(reasoning).toContainText('Reasoning of dispatch');
  // Collapsed: the reasoning is there but hidden until opened.
  await expect(reasoning).toHaveJSProperty('open', false);
  await expect(page.getByTestId('thinking-text-dispatch')).toBeHidden();
  await expect(page.getByTestId('transcript-dispatch')).toHaveText('The module loads the settings.');
  await expect(page.getByTestId('transcript-dispatch')).not.toContainText('weigh');
  await reasoning.locator('summary').click();
  await expect(page.getByTestId('thinking-text-dispatch')).toHaveText(
    'First I weigh what the module does, then I answer. ',
  );
  await page.screenshot({ path: shot('local-runtime-thinking') });

  await page.reload();
  await page.getByTestId('thread-item').filter({ hasText: 'Summarise with reasoning' }).click();
  await expect(page.getByTestId('thinking-dispatch')).toHaveJSProperty('open', false);
  await expect(page.getByTestId('transcript-dispatch')).toHaveText('The module loads the settings.');
  await page.getByTestId('thinking-dispatch').locator('summary').click();
  await expect(page.getByTestId('thinking-text-dispatch')).toContainText('First I weigh what the module does');
});

test('an answer cut at its length limit shows a warning, kept after a reload', async ({ page }) => {
  // More than LOCAL_LLM_MAX_ANSWER_TOKENS (2,048 by default): the runtime stops each answer there.
  await scriptRuntime({ tokens: numberedTokens(2100, 'n') });
  await openStudio(page, 'repo-summary');
  await startRun(page, 'Write far too much');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  const warnings = page.getByTestId('context-warning');
  await expect(warnings.filter({ hasText: 'Answer cut for dispatch' })).toContainText('after 2048 tokens');
  await page.screenshot({ path: shot('local-runtime-answer-cut') });

  await page.reload();
  await page.getByTestId('thread-item').filter({ hasText: 'Write far too much' }).click();
  await expect(page.getByTestId('context-warning').filter({ hasText: 'Answer cut for dispatch' })).toContainText(
    'after 2048 tokens',
  );
  await expect(page.getByTestId('context-warning').filter({ hasText: 'Answer cut' })).toHaveCount(3);
});

test('a cold start shows that the runtime is loading the model, until the answer starts', async ({ page }) => {
  await scriptRuntime({
    models: [...MODELS, 'sleepy-model'],
    loadDelayMs: { 'sleepy-model': 3000 },
    tokens: words('Awake now.'),
  });
  await openWithModel(page, 'sleepy-model');
  await startRun(page, 'Wake the model');
  const loading = page.getByTestId('model-loading');
  await expect(loading).toBeVisible();
  await expect(loading).toContainText('Loading model sleepy-model for dispatch');
  await page.screenshot({ path: shot('local-runtime-cold-start') });
  await expect(page.getByTestId('transcript-dispatch')).toHaveText('Awake now.');
  await expect(loading).toBeHidden();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
});

test('a default model the runtime does not have: the picker says so and offers the models it has', async ({ page }) => {
  await scriptRuntime({ models: ['other-model', 'llama3.2'] });
  await openStudio(page, 'repo-summary');
  await expect(page.getByTestId('default-model-missing')).toContainText(
    'DEFAULT_MODEL "fake-model" is not among the local runtime\'s models: choose one of other-model, llama3.2',
  );
  await expect(page.getByTestId('run-model')).toHaveValue('other-model');
  await expect(page.getByTestId('run-model').locator('option[value=""]')).toBeDisabled();
  await scriptRuntime({ tokens: words('Done on the other model.') });
  await startRun(page, 'Run on what the runtime has');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
});

test('a model that holds less than the budget: the picker shows its lowered budget', async ({ page }) => {
  await scriptRuntime({ models: [...MODELS, 'small-model'], contextLengths: { 'small-model': 4096 } });
  await openWithModel(page, 'small-model');
  await expect(page.getByTestId('run-model').locator('option[value="small-model"]')).toHaveText(
    'small-model (budget lowered to 2048 tokens)',
  );
  await expect(page.getByTestId('model-budget-lowered')).toContainText('small-model holds 4096 tokens');
});
