import { randomUUID } from 'node:crypto';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import {
  api,
  expect,
  openStudio,
  phase,
  screenshotPath,
  script,
  scriptToolTurns,
  startRun,
  test,
  words,
} from './studio.fixtures';

/**
 * Questions from tool servers (docs/approvals.md#questions-from-tool-servers) in the studio: the agent
 * `question-review` (test/e2e/global-setup.ts) may call the asking MCP server of test/fixtures/mcp-asking-server.ts,
 * which asks a person in the middle of its calls. A form is filled in from the inbox, a page answered Done from the run
 * itself; either way the run goes on running while it asks, and on to its gate once answered.
 */

/** The documentation's picture of a question in the inbox. */
const DOCS_IMAGE = path.resolve(import.meta.dirname, '../../docs/images/inbox-question.png');

/** What axe-core finds against WCAG 2.1 A and AA in one part of the page, a line per element. */
async function violations(page: Page, selector: string): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page })
    .include(selector)
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

/** The run's stored events, through the API: the stream of a run that rests at its gate ends there. */
async function runEvents(runId: string): Promise<Record<string, unknown>[]> {
  const text = await (await api(`/runs/${runId}/stream`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>);
}

/**
 * Keeps what the page's live region says from now on: the run's next status may replace a confirmation before a
 * test reads it, as a screen reader would have said it already.
 */
async function listenToAnnouncer(page: Page): Promise<() => Promise<string[]>> {
  await page.evaluate(() => {
    const region = document.querySelector('[data-testid="run-announcer"]')!;
    const said: string[] = [];
    Object.assign(window, { said });
    new MutationObserver(() => said.push(region.textContent?.trim() ?? '')).observe(region, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  return () => page.evaluate(() => (window as unknown as { said: string[] }).said);
}

/** Starts a question-review run whose intake makes the one call `call` of the asking server. */
async function startAskingRun(page: Page, call: string, args: Record<string, unknown>, message: string) {
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openStudio(page, 'question-review');
  await scriptToolTurns([[{ name: `asker__${call}`, arguments: args }]]);
  await script(words(`Noted for ${message}.`));
  await startRun(page, message);
}

test('a form a tool server asks for: refused empty, filled in in the inbox, the server gets the fields, the run goes on', async ({
  page,
}) => {
  const marker = `ask-${randomUUID().slice(0, 8)}`;
  await startAskingRun(page, 'ask_release', {}, `Name the release ${marker}`);

  // The run asks where its call is, and goes on running: it waits for nobody's approval.
  const inRun = page.getByTestId('run-question');
  await expect(inRun).toHaveAttribute('data-state', 'asked');
  await expect(inRun.getByRole('heading')).toHaveText('asker.ask_release asks');
  await expect(inRun.getByTestId('run-question-message')).toHaveText('Which name should the release carry?');
  await expect(inRun.getByTestId('run-question-facts')).toContainText('Members of the project and above answer');
  await expect(inRun.getByTestId('run-question-facts')).toContainText('Expires in');
  await expect(page.getByTestId('run-asks')).toHaveText(
    'Running: asker.ask_release waits for an answer to its question',
  );
  await expect(page.getByTestId('run-status')).not.toContainText('Waiting for approval');
  await expect(phase(page, 'intake')).toHaveAttribute('data-state', 'active');
  await expect(page.getByTestId('phase-mark-intake')).toHaveText('waits for an answer');

  // The inbox lists it with a card of its own: the server's message as text, and a form made from its fields.
  await page.getByTestId('inbox-open').click();
  const item = page.locator('[data-testid="inbox-item"][data-kind="question"]').filter({ hasText: marker });
  await expect(item).toHaveCount(1);
  await expect(item.getByRole('heading')).toHaveText('asker.ask_release asks');
  await expect(item.getByTestId('inbox-question-message')).toHaveText('Which name should the release carry?');
  await expect(item).toContainText('Question from asker in “Intake” · members and above answer');
  await expect(item.getByTestId('inbox-deadline')).toContainText('Expires in');
  const name = item.getByRole('textbox', { name: 'Release name (required)' });
  const count = item.getByRole('spinbutton', { name: 'How many' });
  await expect(name).toHaveAttribute('aria-required', 'true');
  await expect(count).toHaveAttribute('min', '1');
  await expect(count).toHaveAttribute('step', '1');

  // Sent empty: nothing goes to the server; the required field says so, and the keyboard is taken to it.
  await item.getByTestId('question-send').click();
  await expect(item.getByTestId('question-problem-name')).toHaveText('Required.');
  await expect(name).toHaveAttribute('aria-invalid', 'true');
  await expect(name).toHaveAccessibleDescription('Required.');
  await expect(name).toBeFocused();
  await item.scrollIntoViewIfNeeded();
  expect(await violations(page, '[data-testid="inbox-item"][data-kind="question"]')).toEqual([]);
  await page.screenshot({ path: screenshotPath('questions-inbox-required') });

  // Filled in from the keyboard alone, from the field it was taken to: the field says nothing more, and the count is
  // typed as the schema types it, a number.
  await page.keyboard.type(`v-${marker}`);
  await expect(item.getByTestId('question-problem-name')).toHaveCount(0);
  await expect(name).toHaveAttribute('aria-invalid', 'false');
  await page.keyboard.press('Tab');
  await expect(count).toBeFocused();
  await page.keyboard.type('3');
  await item.screenshot({ path: DOCS_IMAGE });
  await page.keyboard.press('Tab');
  await expect(item.getByTestId('question-send')).toBeFocused();

  // What the server refuses is said at the form in its words: here an answer changed on its way to a count the
  // question does not take (as from a studio that checks less than the server), which the server's own check finds.
  const answerUrl = '**/stops/*/answer';
  await page.route(answerUrl, (route) => {
    const body = route.request().postDataJSON() as { content: Record<string, unknown> };
    return route.continue({ postData: JSON.stringify({ ...body, content: { ...body.content, count: 0 } }) });
  });
  await page.keyboard.press('Enter');
  const refused = item.getByTestId('question-error');
  await expect(refused).toContainText("The answer was not taken: the answer does not fit the question's fields");
  await expect(refused).toContainText('/count: 0 is less than 1');
  await expect(refused).toBeFocused();
  await expect(item.getByTestId('question-send')).toHaveAccessibleDescription(/0 is less than 1/);
  await page.unroute(answerUrl);

  const said = await listenToAnnouncer(page);
  await item.getByTestId('question-send').press('Enter');
  await expect(page.getByTestId('inbox-notice')).toContainText('Sent: asker.ask_release goes on with your answer.');
  await expect(item).toHaveCount(0);
  await expect.poll(said).toContainEqual(expect.stringContaining('Sent: asker.ask_release goes on with your answer.'));

  // The run went on to its gate; the question says who answered, and the call what the server made of it.
  await page.getByTestId('inbox-close').click();
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  await expect(inRun).toHaveAttribute('data-state', 'accept');
  await expect(inRun.getByTestId('run-question-outcome')).toHaveText('Answered: accept by the API token');
  await expect(page.getByTestId('phase-mark-intake')).toHaveCount(0);
  const expected = `accept ${JSON.stringify({ name: `v-${marker}`, count: 3 })}`;
  await expect(page.getByTestId('transcript-tool-call').getByTestId('tool-call-result')).toContainText(expected);

  // Through the API: the server got exactly the fields, typed as its schema types them.
  const runId = await page.getByTestId('run-id').getAttribute('data-id');
  const events = await runEvents(runId!);
  expect(events.find((e) => e.type === 'tool_question_answered')).toMatchObject({ action: 'accept' });
  expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ tool: 'asker.ask_release', text: expected });
});

test('a page a tool server sends a person to: its host and link shown, answered Done in the run itself', async ({
  page,
}) => {
  const marker = `connect-${randomUUID().slice(0, 8)}`;
  const url = `https://accounts.example.test/connect?session=${marker}`;
  await startAskingRun(page, 'connect', { url }, `Connect the account ${marker}`);

  // In the inbox: the host before anything else, the whole address as text, and a link that opens nothing itself.
  await page.getByTestId('inbox-open').click();
  const item = page.locator('[data-testid="inbox-item"][data-kind="question"]').filter({ hasText: marker });
  await expect(item.getByRole('heading')).toHaveText('asker.connect asks you to open a page at accounts.example.test');
  await expect(item.getByTestId('inbox-question-message')).toHaveText('Connect your account to go on.');
  await expect(item.getByTestId('question-url')).toHaveText(url);
  const link = item.getByTestId('question-link');
  await expect(link).toHaveAttribute('href', url);
  await expect(link).toHaveAttribute('target', '_blank');
  await expect(link).toHaveAttribute('rel', 'noopener noreferrer');
  await expect(item.getByTestId('question-send')).toHaveText('Done');
  expect(await violations(page, '[data-testid="inbox-item"][data-kind="question"]')).toEqual([]);
  expect(page.context().pages()).toHaveLength(1);

  // Open the thread: the keyboard lands on the question, answered where its call is.
  await item.getByTestId('inbox-open-thread').click();
  const inRun = page.getByTestId('run-question');
  await expect(inRun.getByTestId('question-url')).toHaveText(url);
  const done = inRun.getByTestId('question-send');
  await expect(inRun.getByTestId('question-link')).toBeFocused();
  expect(await violations(page, '[data-testid="run-question"]')).toEqual([]);
  await page.screenshot({ path: screenshotPath('questions-run-page') });
  await done.click();
  await expect(inRun.getByTestId('run-question-outcome')).toHaveText('Answered: accept by the API token');
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  await expect(page.getByTestId('transcript-tool-call').getByTestId('tool-call-result')).toContainText('accept {}');

  // It left the inbox with its answer.
  await page.getByTestId('inbox-open').click();
  await expect(page.getByTestId('inbox')).toBeVisible();
  await expect(
    page.locator('[data-testid="inbox-item"][data-kind="question"]').filter({ hasText: marker }),
  ).toHaveCount(0);
});
