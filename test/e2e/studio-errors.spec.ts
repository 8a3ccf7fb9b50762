import { randomUUID } from 'node:crypto';
import type { Page, Route } from '@playwright/test';
import { expect, test } from './studio.fixtures';
import { openStudio, phase, screenshotPath as shot, sql } from './studio.fixtures';

/** Makes the server's answer to GET `pathname` fail with `status` and the API's error envelope. */
async function failGet(page: Page, pathname: string | RegExp, status: number, message: string): Promise<void> {
  await page.route(
    (url) => (typeof pathname === 'string' ? url.pathname === pathname : pathname.test(url.pathname)),
    (route: Route) =>
      route.request().method() === 'GET'
        ? route.fulfill({
            status,
            contentType: 'application/json',
            body: JSON.stringify({ error: { code: status === 503 ? 'unavailable' : 'internal', message } }),
          })
        : route.continue(),
  );
}

const retry = (page: Page, testId: string) => page.getByTestId(testId).getByRole('button', { name: 'Retry' });

test('a failed queue poll is said in the header with a Retry that recovers', async ({ page }) => {
  await openStudio(page);
  await failGet(page, '/queue/status', 503, 'the queue is not answering');
  const notice = page.getByTestId('queue-error');
  await expect(notice).toHaveText(/Queue status failed: the queue is not answering\s*Retry/);
  await expect(notice).toHaveAttribute('role', 'alert');
  await page.screenshot({ path: shot('11-queue-error') });
  await page.unrouteAll();
  await retry(page, 'queue-error').click();
  await expect(notice).toBeHidden();
  await expect(page.getByTestId('queue-badge')).toContainText(/Queue \d+\/\d+ busy/);
});

test('a failed thread list is said above the list with a Retry that loads it', async ({ page }) => {
  const thread = randomUUID();
  await sql(
    `INSERT INTO svc_threads (id, agent, model, last_message, project_id) VALUES ($1, 'repo-summary', 'fake-model', 'a thread behind an error', '00000000-0000-4000-8000-000000000003')`,
    [thread],
  );
  await failGet(page, '/threads', 500, 'the thread list broke');
  await openStudio(page);
  const notice = page.getByTestId('threads-error');
  await expect(notice).toHaveText(/Threads could not be loaded: the thread list broke\s*Retry/);
  await expect(notice).toHaveAttribute('role', 'alert');
  await expect(page.getByTestId('thread-item').filter({ hasText: 'a thread behind an error' })).toHaveCount(0);
  await page.screenshot({ path: shot('12-threads-error') });
  await page.unrouteAll();
  await retry(page, 'threads-error').click();
  await expect(notice).toBeHidden();
  await expect(page.getByTestId('thread-item').filter({ hasText: 'a thread behind an error' })).toBeVisible();
});

test('a graph that fails to load is said above the canvas with a Retry that shows it', async ({ page }) => {
  await openStudio(page);
  await failGet(page, /\/graph-definition(\?|$)/, 503, 'the catalog is not answering');
  await page.getByTestId('asset-repo-summary').click();
  const notice = page.getByTestId('graph-error');
  await expect(notice).toHaveText(
    /The graph of repo-summary could not be loaded: the catalog is not answering\s*Retry/,
  );
  await expect(notice).toHaveAttribute('role', 'alert');
  await expect(phase(page, 'dispatch')).toBeHidden();
  await page.screenshot({ path: shot('13-graph-error') });
  await page.unrouteAll();
  await retry(page, 'graph-error').click();
  await expect(notice).toBeHidden();
  await expect(phase(page, 'dispatch')).toBeVisible();
});

test('a failed /auth/me or tenancy list is said in the header with a Retry that recovers', async ({ page }) => {
  await failGet(page, '/auth/me', 503, 'the identity provider is down');
  await failGet(page, '/orgs', 500, 'the organisations broke');
  await openStudio(page);
  await expect(page.getByTestId('identity-error')).toHaveText(
    /Who you are could not be loaded: the identity provider is down\s*Retry/,
  );
  await expect(page.getByTestId('scopes-error')).toHaveText(
    /Organisations and projects could not be loaded: the organisations broke\s*Retry/,
  );
  await page.unrouteAll();
  await retry(page, 'identity-error').click();
  await expect(page.getByTestId('identity-error')).toBeHidden();
  await expect(page.getByTestId('scopes-error')).toBeHidden();
  await expect(page.getByTestId('user-name')).toHaveText('the API token');
  await expect(page.getByTestId('scope-switcher')).toBeVisible();
});
