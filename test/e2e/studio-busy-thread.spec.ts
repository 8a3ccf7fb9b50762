import { expect, test } from './studio.fixtures';
import { api, openStudio, screenshotPath as shot, script, startRun, words } from './studio.fixtures';

/**
 * A message to a thread whose run is still going: the run form asks what to do with it (queue it, stop the current
 * run, or replace it), and the run on screen says where the new one stands.
 */
const slowTokens = Array.from({ length: 60 }, (_, i) => `slow${i} `);

async function statusOf(runId: string): Promise<string | undefined> {
  const res = await api(`/runs/${runId}`);
  return res.ok ? ((await res.json()) as { status: string }).status : `gone (${res.status})`;
}

test('a second message is queued behind the running run, and runs when it ends', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  await script(slowTokens, 40);
  await startRun(page, 'Summarise the repository');
  await expect(page.getByTestId('run-status')).toContainText('Running');
  const first = (await page.getByTestId('run-id').getAttribute('data-id'))!;

  // Nothing to choose while the message would start a thread of its own.
  await expect(page.getByTestId('run-busy-choice')).toBeHidden();
  await page.getByTestId('run-continue-thread').check();
  const choice = page.getByTestId('run-busy-choice');
  await expect(choice).toBeVisible();
  await expect(page.getByTestId('run-strategy-enqueue')).toBeChecked();
  await expect(page.getByTestId('run-submit')).toHaveText('Queue');
  await expect(page.getByTestId('run-submit')).toBeEnabled();
  await page.getByTestId('run-message').fill('Now list the open issues');
  await page.screenshot({ path: shot('busy-thread-choice') });

  await page.getByTestId('run-submit').click();
  await expect(page.getByTestId('run-queued')).toHaveText('Queued: starts when the thread’s current run ends');
  await page.screenshot({ path: shot('busy-thread-queued') });
  expect(await statusOf(first)).toBe('running');

  await script(words('The open issues are listed.'));
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete', { timeout: 30_000 });
  expect(await statusOf(first)).toBe('completed');
});

test('stop the current run: it is cancelled, keeping what it wrote, and the new message runs at once', async ({
  page,
}) => {
  await openStudio(page, 'repo-summary');
  await script(slowTokens, 40);
  await startRun(page, 'Summarise the repository slowly');
  await expect(page.getByTestId('run-status')).toContainText('Running');
  const first = (await page.getByTestId('run-id').getAttribute('data-id'))!;

  await page.getByTestId('run-continue-thread').check();
  await page.getByTestId('run-strategy-interrupt').check();
  await expect(page.getByTestId('run-submit')).toHaveText('Stop and run');
  await script(words('A short summary.'));
  await page.getByTestId('run-message').fill('Just the short version');
  await page.getByTestId('run-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('run-id')).not.toHaveAttribute('data-id', first);
  expect(await statusOf(first)).toBe('cancelled');
});

test('replace the current run: it is removed from the thread', async ({ page }) => {
  await openStudio(page, 'repo-summary');
  await script(slowTokens, 40);
  await startRun(page, 'A message with a typo');
  await expect(page.getByTestId('run-status')).toContainText('Running');
  const first = (await page.getByTestId('run-id').getAttribute('data-id'))!;

  await page.getByTestId('run-continue-thread').check();
  await page.getByTestId('run-strategy-rollback').check();
  await expect(page.getByTestId('run-submit')).toHaveText('Replace and run');
  await script(words('The corrected answer.'));
  await page.getByTestId('run-message').fill('The message without the typo');
  await page.getByTestId('run-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  expect(await statusOf(first)).toBe('gone (404)');
});
