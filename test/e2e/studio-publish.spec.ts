import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect, openStudio, screenshotPath, script, startRun, test, words } from './studio.fixtures';

/**
 * What an approval publishes: change-review writes the approved review into the run's project folder, and the run
 * says where, in a file named after the thread's title.
 */

test('after the approval, the run shows the published file: named after the thread, with its path and size', async ({
  page,
}) => {
  const folder = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-publish-'));
  try {
    const marker = randomUUID().slice(0, 8);
    const review = `Approve. The retry keeps its backoff ${marker}; one nit about the log line.`;
    await page.setViewportSize({ width: 1440, height: 900 });
    await openStudio(page);
    await page.getByTestId('run-project-path').fill(folder);
    await script(words(review));
    await startRun(page, 'Fix the retry of failed webhooks (#812)');
    await expect(page.getByTestId('approval-card')).toBeVisible();
    await page.getByTestId('gate-approve').click();
    await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');

    // One file in reviews/, named after the thread's title and the run, holding exactly the approved review.
    const written = await fs.readdir(path.join(folder, 'reviews'));
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/^fix-the-retry-of-failed-webhooks-812-[0-9a-f]{8}\.md$/);
    const file = `reviews/${written[0]}`;
    const content = await fs.readFile(path.join(folder, file), 'utf8');
    expect(content).toBe(`${review} `);

    // The run shows the publish step as the call it is: where it wrote, how much, and the tool's answer.
    const published = page.getByTestId('transcript-tool-call').filter({ has: page.getByTestId('tool-call-published') });
    await expect(published).toHaveAttribute('data-node', 'output');
    await expect(published.getByRole('heading')).toHaveText(
      'output published the approved analysis with project.write_file',
    );
    await expect(published.getByTestId('published-path')).toHaveText(file);
    await expect(published.getByTestId('published-size')).toHaveText(`1 line, ${Buffer.byteLength(content)} bytes`);
    await expect(published.getByTestId('tool-call-status')).toHaveText('Ran (covered by the gate)');
    await expect(published.getByTestId('tool-call-result')).toContainText(
      `created ${file} (${Buffer.byteLength(content)} bytes)`,
    );
    // The approved text is shown once, as the run's output: not a second time inside the call.
    await expect(published.getByTestId('tool-call-arguments')).toHaveCount(0);
    await published.scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath('publish-1440') });

    await page.setViewportSize({ width: 1024, height: 768 });
    await published.scrollIntoViewIfNeeded();
    await expect(published.getByTestId('published-path')).toBeInViewport();
    await page.screenshot({ path: screenshotPath('publish-1024') });

    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId('pane-run').click();
    await published.scrollIntoViewIfNeeded();
    await expect(published.getByTestId('published-path')).toBeInViewport();
    await page.screenshot({ path: screenshotPath('publish-390') });
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
});
