import { baseUrl, expect, openStudio, startRun, script, test, words } from './studio.fixtures';
import { declaredOperations, renderedOperations } from '../helpers/api-docs';

test('the studio, the portal and the API docs work under their content policies, without one violation', async ({
  page,
}) => {
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  await page.addInitScript(() =>
    document.addEventListener('securitypolicyviolation', (e) =>
      console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI}`),
    ),
  );

  // The studio: the graph canvas, a streamed run, the transcript.
  await openStudio(page, 'repo-summary');
  await script(words('The repository holds one service and its tests.'));
  await startRun(page, 'Summarise the repository');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('transcript-dispatch')).toContainText('one service and its tests');
  const studio = await page.request.get(`${baseUrl()}/ui`);
  expect(studio.headers()['content-security-policy']).toContain("default-src 'self'");
  expect(studio.headers()['x-frame-options']).toBe('DENY');

  // The portal: its inline stylesheet and script, allowed by their hashes.
  await page.goto(`${baseUrl()}/`);
  await expect(page.locator('button.copy').first()).toBeVisible();

  // The API docs: Swagger UI from its own files.
  await page.goto(`${baseUrl()}/docs`);
  const rendered = await renderedOperations(page);
  expect([...(await declaredOperations(baseUrl()))].filter((op) => !rendered.has(op))).toEqual([]);

  expect(violations).toEqual([]);
});
