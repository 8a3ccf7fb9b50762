import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import { DEFAULT_TEAM_ID, type Scope } from '../../src-server/contracts/tenancy';
import { signSession } from '../helpers/sessions';
import {
  api,
  baseUrl,
  expect,
  openStudio,
  phase,
  prompts,
  screenshotPath,
  script,
  signInByLink,
  sql,
  startRun,
  test,
  words,
} from './studio.fixtures';

/**
 * Approvals that go past every peer: a gate decided from the inbox without opening its thread, with the gated text
 * edited; a gate sent back with feedback and reached again; a gate two people must approve, seen by both.
 */

/** The states of a phase and of the gate, read in one snapshot: a phase of a second may end between two reads. */
const states = (page: Page, ids: string[]) =>
  page.evaluate(
    (nodes) => nodes.map((id) => document.querySelector(`[data-testid="phase-${id}"]`)?.getAttribute('data-state')),
    ids,
  );

test('an edit from the inbox: the phase after the gate reads the edited text, and the record says who edited it', async ({
  page,
}) => {
  const marker = `edit-${randomUUID().slice(0, 8)}`;
  await openStudio(page);
  await script(words(`Analysis ${marker}: the loader rename is safe to ship.`));
  await startRun(page, `Review: the inbox edit ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();

  // The header counts the gates waiting for her; the inbox lists this one, oldest first, without opening it.
  await expect(page.getByTestId('inbox-count')).toHaveText(/^[1-9]\d*$/);
  await page.getByTestId('inbox-open').click();
  await expect(page.getByTestId('inbox')).toBeVisible();
  const item = page.getByTestId('inbox-item').filter({ hasText: marker });
  await expect(item.getByTestId('inbox-agent')).toHaveText('change-review');
  await expect(item.getByTestId('inbox-project')).toHaveText('Default project');
  await expect(item.getByRole('heading')).toHaveText('Publish this review to the author?');
  await expect(item.getByTestId('inbox-message')).toHaveText(`“Review: the inbox edit ${marker}”`);
  await expect(item.getByTestId('inbox-excerpt')).toContainText(`Analysis ${marker}`);
  await expect(item.getByTestId('inbox-waiting')).toContainText('waiting');
  await expect(item.getByTestId('inbox-deadline')).toHaveCount(0);

  await item.getByTestId('gate-edit').click();
  const text = item.getByTestId('gate-edit-text');
  await expect(text).toHaveAttribute('data-node', 'analysis');
  await expect(text).toHaveValue(`Analysis ${marker}: the loader rename is safe to ship. `);
  await expect(item.getByTestId('gate-edit-submit')).toBeDisabled();
  await text.fill(`EDITED ${marker}: safe to ship once the migration note is added.`);
  await item.getByTestId('gate-reason').fill('the migration note is missing');
  await page.screenshot({ path: screenshotPath('approvals-inbox-edit') });

  await item.getByTestId('gate-edit-submit').click();
  await expect(page.getByTestId('inbox-notice')).toContainText('Approved with your edits');
  await expect(item).toHaveCount(0);

  // The run was on screen: it went on there, and shows the decision where it was taken. Its output phase publishes
  // exactly the approved text, the edited analysis (this run has no project to write it into: the phase says so).
  await page.getByTestId('inbox-close').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('transcript-output')).toContainText(
    `EDITED ${marker}: safe to ship once the migration note is added.`,
  );
  const decision = page.getByTestId('transcript-decision');
  await expect(decision).toHaveAttribute('data-decision', 'edit');
  await expect(decision.getByTestId('decision-summary')).toContainText('Approved with edits by the API token');
  await expect(decision.getByTestId('decision-reason')).toHaveText('“the migration note is missing”');
  await expect(decision.getByTestId('decision-edit-analysis')).toContainText(`EDITED ${marker}`);
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_passed');
  await expect(page.getByTestId('phase-mark-gate')).toHaveText('approved with edits');
  await page.screenshot({ path: screenshotPath('approvals-edited-completed') });

  // The record, with the decider's role and time: on the card's tab and in the thread's History.
  await page.getByTestId('tab-approval').click();
  await expect(page.getByTestId('gate-decision')).toHaveCount(1);
  await expect(page.getByTestId('gate-decision')).toContainText('Approved with edits by the API token');
  await page.getByTestId('tab-history').click();
  await expect(page.getByTestId('history-decision')).toHaveCount(1);
  await expect(page.getByTestId('history-decision').getByTestId('decision-edit-analysis')).toContainText(
    `EDITED ${marker}`,
  );
  await page.screenshot({ path: screenshotPath('approvals-edited-history') });
});

test('a respond loop: the phase before the gate runs again with the feedback, the gate asks again, then approve', async ({
  page,
}) => {
  const marker = `respond-${randomUUID().slice(0, 8)}`;
  // Someone else's run, not on screen: it reaches the studio through the inbox.
  await script(words(`First analysis ${marker}.`));
  const started = await api('/graphs/change-review/run', { method: 'POST', json: { message: `Review: ${marker}` } });
  expect(await started.text()).toContain('event: gate_waiting');

  await openStudio(page);
  await page.getByTestId('inbox-open').click();
  const item = page.getByTestId('inbox-item').filter({ hasText: marker });
  await item.getByTestId('inbox-open-thread').click();
  await expect(page.getByTestId('inbox')).toHaveCount(0);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('gate-context-analysis')).toContainText(`First analysis ${marker}.`);

  await page.getByTestId('gate-respond').click();
  await expect(page.getByTestId('gate-respond-submit')).toHaveText('Send back to analysis');
  await expect(page.getByTestId('gate-respond-submit')).toBeDisabled();
  await page.getByTestId('gate-response').fill(`Say more about the tests of ${marker}.`);
  await page.screenshot({ path: screenshotPath('approvals-respond-form') });

  const before = (await prompts()).length;
  // About a second and a half: the phase is seen working again.
  await script(words(`Second analysis ${marker}, now with the tests: all pass.`), 150);
  await page.getByTestId('gate-respond-submit').click();

  // The flow goes back: the gate is marked sent back while the analysis runs again.
  await expect.poll(() => states(page, ['analysis', 'gate']), { intervals: [50] }).toEqual(['active', 'gate_returned']);
  await expect(page.getByTestId('phase-mark-gate')).toHaveText('sent back to analysis');
  await page.screenshot({ path: screenshotPath('approvals-respond-running-again') });

  // The gate is reached again, with the new analysis in front of the approver.
  await expect(page.getByTestId('gate-context-analysis')).toContainText(`Second analysis ${marker}`);
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_waiting');
  await expect(page.getByTestId('run-status')).toContainText('Waiting for approval');
  // The analysis ran again with the feedback in its prompt.
  expect((await prompts(before)).some((p) => p.used.includes(`Say more about the tests of ${marker}.`))).toBe(true);
  const analyses = page.getByTestId('transcript-analysis');
  await expect(analyses).toHaveCount(2);
  await expect(analyses.first()).toContainText(`First analysis ${marker}`);
  await expect(analyses.last()).toContainText(`Second analysis ${marker}`);
  const sentBack = page.getByTestId('transcript-decision');
  await expect(sentBack).toHaveAttribute('data-decision', 'respond');
  await expect(sentBack.getByTestId('decision-summary')).toContainText('Sent back to Review by the API token');
  await expect(sentBack.getByTestId('decision-response')).toContainText(`Say more about the tests of ${marker}.`);
  await page.screenshot({ path: screenshotPath('approvals-respond-asked-again') });

  await script(words('Published with the tests.'));
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(page.getByTestId('transcript-decision')).toHaveCount(2);
  await expect(page.getByTestId('transcript-decision').last()).toHaveAttribute('data-decision', 'approve');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_passed');

  await page.getByTestId('tab-history').click();
  const record = page.getByTestId('history-decision');
  await expect(record).toHaveCount(2);
  await expect(record.first()).toContainText('Sent back to Review');
  await expect(record.last()).toContainText('Approved by the API token');
  await page.screenshot({ path: screenshotPath('approvals-respond-history') });
});

/** Someone who works in one project only, signed in with a session of their own in a browser of their own. */
async function member(page: Page, name: string, projectId: string): Promise<{ id: string; token: string }> {
  const id = randomUUID();
  await sql(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', $2, $3)`, [id, id, name]);
  const granted = await api(`/projects/${projectId}/members/${id}`, { method: 'PUT', json: { role: 'member' } });
  expect(granted.status).toBe(200);
  const token = await signSession(id, process.env.E2E_SESSION_SECRET!, '1h', name);
  await signInByLink(page, `${baseUrl()}/ui#token=${token}`, page.getByTestId('user-name'));
  await expect(page.getByTestId('user-name')).toHaveText(name);
  return { id, token };
}

test('a gate two people must approve: both see 1 of 2, nobody approves twice, the second approval completes the run', async ({
  browser,
}) => {
  test.setTimeout(120_000);
  const suffix = randomUUID().slice(0, 6);
  const created = await api('/projects', {
    method: 'POST',
    json: { name: `Two approvers ${suffix}`, parent_id: DEFAULT_TEAM_ID },
  });
  expect(created.status).toBe(201);
  const project = (await created.json()) as Scope;

  const [adaContext, benContext] = [await browser.newContext(), await browser.newContext()];
  const [adaPage, benPage] = [await adaContext.newPage(), await benContext.newPage()];
  for (const p of [adaPage, benPage]) await p.setViewportSize({ width: 1600, height: 1000 });
  const adaName = `Ada ${suffix}`;
  const benName = `Ben ${suffix}`;
  const ada = await member(adaPage, adaName, project.id);
  const ben = await member(benPage, benName, project.id);
  await expect(adaPage.getByTestId('inbox-count')).toHaveText('0');

  // A run of their project stops at the gate that needs two approvals.
  await script(words(`Two-person analysis ${suffix}: safe to ship.`));
  const started = await api('/graphs/two-person-review/run', {
    method: 'POST',
    json: { message: `Review: two people ${suffix}`, project_id: project.id },
  });
  expect(await started.text()).toContain('event: gate_waiting');
  const [run] = await sql<{ id: string; thread_id: string }>(`SELECT id, thread_id FROM svc_runs WHERE message = $1`, [
    `Review: two people ${suffix}`,
  ]);

  // Both are told by their header, at its next poll.
  await expect(adaPage.getByTestId('inbox-count')).toHaveText('1');
  await expect(benPage.getByTestId('inbox-count')).toHaveText('1');

  // Ada opens the thread from her inbox and approves on its card: her part is done, and the gate waits for one more.
  await adaPage.getByTestId('inbox-open').click();
  const adaItem = adaPage.getByTestId('inbox-item');
  await expect(adaItem).toHaveCount(1);
  await expect(adaItem.getByTestId('inbox-project')).toHaveText(`Two approvers ${suffix}`);
  await expect(adaItem.getByTestId('inbox-approvals')).toHaveText('0 of 2 approvals');
  await expect(adaItem.getByTestId('inbox-deadline')).toHaveText(
    'Expires in 30 min: then it is rejected and the run ends.',
  );
  await adaPage.screenshot({ path: screenshotPath('approvals-two-people-inbox') });
  await adaItem.getByTestId('inbox-open-thread').click();
  await expect(adaPage.getByTestId('approval-card')).toBeVisible();
  await expect(adaPage.getByTestId('gate-approvals')).toHaveText('0 of 2 approvals');
  await expect(adaPage.getByTestId('gate-deadline')).toContainText('then it is rejected and the run ends');
  await adaPage.getByTestId('gate-approve').click();
  await expect(adaPage.getByTestId('gate-approvals')).toContainText('1 of 2 approvals');
  await expect(adaPage.getByTestId('gate-approvals')).toContainText(`✓ ${adaName}`);
  await expect(adaPage.getByTestId('gate-partial')).toHaveText(
    'You approved. The gate waits for 1 more approval before the run goes on.',
  );
  await expect(adaPage.getByTestId('run-status')).toContainText('Waiting for approval');
  await expect(adaPage.getByTestId('inbox-count')).toHaveText('0');
  // She may not approve twice: the card does not offer it, and the server refuses it.
  await expect(adaPage.getByTestId('gate-approve')).toBeDisabled();
  await expect(adaPage.getByTestId('gate-edit')).toBeDisabled();
  await expect(adaPage.getByTestId('phase-mark-gate')).toHaveText('1 of 2 approvals');
  await adaPage.screenshot({ path: screenshotPath('approvals-two-people-first-approved') });
  const twice = await fetch(`${baseUrl()}/threads/${run!.thread_id}/gates/gate/approve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(twice.status).toBe(409);

  // Ben's inbox shows her approval; he approves there, without opening the thread, and the run goes on.
  await benPage.getByTestId('inbox-open').click();
  const benItem = benPage.getByTestId('inbox-item');
  await expect(benItem.getByTestId('inbox-approvals')).toHaveText(`1 of 2 approvals · approved by ${adaName}`);
  await benPage.screenshot({ path: screenshotPath('approvals-two-people-second-inbox') });
  await script(words('Published after two approvals.'));
  await benItem.getByTestId('gate-approve').click();
  await expect(benPage.getByTestId('inbox-notice')).toContainText('Approved: the run goes on.');
  await expect(benPage.getByTestId('inbox-empty')).toBeVisible();
  await expect(benPage.getByTestId('inbox-count')).toHaveText('0');

  // Ada's studio followed no stream: its check of the waiting gate sees the run go on to its end.
  await expect(adaPage.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(adaPage.getByTestId('transcript-output')).toHaveText('Published after two approvals. ');
  // Shown from the record: each approval where it was given.
  await expect(adaPage.getByTestId('transcript-decision').getByTestId('decision-summary')).toHaveText([
    `Two people approve · Approved by ${adaName}`,
    `Two people approve · Approved by ${benName}`,
  ]);
  await expect(phase(adaPage, 'gate')).toHaveAttribute('data-state', 'gate_passed');

  // The record: one approval each, as members of the project, on the card's tab and in the History.
  await expect(adaPage.getByTestId('gate-decision')).toHaveCount(2);
  await adaPage.screenshot({ path: screenshotPath('approvals-two-people-completed') });
  await adaPage.getByTestId('tab-history').click();
  const record = adaPage.getByTestId('history-decision');
  await expect(record).toHaveCount(2);
  await expect(record.first()).toContainText(`Approved by ${adaName}`);
  await expect(record.first()).toContainText('member');
  await expect(record.last()).toContainText(`Approved by ${benName}`);
  const stored = await sql<{ decided_by: string }>(
    `SELECT decided_by FROM svc_gate_decisions WHERE run_id = $1 ORDER BY id`,
    [run!.id],
  );
  expect(stored.map((r) => r.decided_by)).toEqual([ada.id, ben.id]);
  await adaPage.screenshot({ path: screenshotPath('approvals-two-people-history') });
  await adaContext.close();
  await benContext.close();
});

test('an approval of the text another approver has edited since is refused in the inbox, which then shows the edit to approve', async ({
  browser,
}) => {
  test.setTimeout(120_000);
  const suffix = randomUUID().slice(0, 6);
  const created = await api('/projects', {
    method: 'POST',
    json: { name: `Edited since ${suffix}`, parent_id: DEFAULT_TEAM_ID },
  });
  const project = (await created.json()) as Scope;
  const benContext = await browser.newContext();
  const benPage = await benContext.newPage();
  await benPage.setViewportSize({ width: 1600, height: 1000 });
  const ben = await member(benPage, `Ben ${suffix}`, project.id);
  // Ada decides through the API, as a member of the same project.
  const adaId = randomUUID();
  const adaName = `Ada ${suffix}`;
  await sql(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', $2, $3)`, [adaId, adaId, adaName]);
  expect(
    (await api(`/projects/${project.id}/members/${adaId}`, { method: 'PUT', json: { role: 'member' } })).status,
  ).toBe(200);
  const adaToken = await signSession(adaId, process.env.E2E_SESSION_SECRET!, '1h', adaName);

  await script(words(`Findings ${suffix}: the first text.`));
  const started = await api('/graphs/two-person-review/run', {
    method: 'POST',
    json: { message: `Review: edited since ${suffix}`, project_id: project.id },
  });
  expect(await started.text()).toContain('event: gate_waiting');
  const [run] = await sql<{ id: string; thread_id: string }>(`SELECT id, thread_id FROM svc_runs WHERE message = $1`, [
    `Review: edited since ${suffix}`,
  ]);

  // Ben reads the gate in his inbox; his inbox keeps showing what he read (a slow reader: its refreshes answer the
  // list as it was when he read it).
  let read: string | undefined;
  await benPage.route('**/approvals', async (route) => {
    if (route.request().method() !== 'GET') return route.continue();
    if (read) return route.fulfill({ status: 200, contentType: 'application/json', body: read });
    const response = await route.fetch();
    const body = await response.text();
    if (body.includes(run!.id)) read = body;
    return route.fulfill({ response, body });
  });
  await expect(benPage.getByTestId('inbox-count')).toHaveText('1');
  await benPage.getByTestId('inbox-open').click();
  const item = benPage.getByTestId('inbox-item');
  await expect(item.getByTestId('inbox-excerpt')).toHaveText(`Findings ${suffix}: the first text.`);

  // Meanwhile Ada approves with the findings rewritten: the gate's next round, 1 of 2.
  const stop = (await (await api(`/runs/${run!.id}`)).json()) as { stop: { id: string; round: number } };
  const edited = await fetch(`${baseUrl()}/stops/${encodeURIComponent(stop.stop.id)}/decision`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adaToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      decision: 'approve',
      round: stop.stop.round,
      edits: { analysis: `Ada rewrote ${suffix}.` },
    }),
  });
  expect(edited.status).toBe(202);

  // Ben approves what he read: refused, and said so; nothing of his is recorded.
  await item.getByTestId('gate-approve').click();
  await expect(item.getByTestId('inbox-result')).toContainText(
    `The decision was not taken: gate "gate" on thread ${run!.thread_id} changed since you read it: approved with edits by ${adaName}`,
  );
  await expect(item.getByTestId('inbox-result')).toContainText(
    'it is at round 2 now: read it again and decide that round',
  );
  await benPage.screenshot({ path: screenshotPath('approvals-edited-since-refused') });
  const before = await sql<{ decided_by: string }>(`SELECT decided_by FROM svc_gate_decisions WHERE run_id = $1`, [
    run!.id,
  ]);
  expect(before.map((r) => r.decided_by)).toEqual([adaId]);

  // His inbox reads the list again: the edited text, with Ada's approval; he approves that, and the run goes on.
  await benPage.unroute('**/approvals');
  await benPage.getByTestId('inbox-refresh').click();
  await expect(item.getByTestId('inbox-excerpt')).toHaveText(`Ada rewrote ${suffix}.`);
  await expect(item.getByTestId('inbox-approvals')).toHaveText(`1 of 2 approvals · approved by ${adaName}`);
  await script(words('Published the rewritten review.'));
  await item.getByTestId('gate-approve').click();
  await expect(benPage.getByTestId('inbox-notice')).toContainText('Approved: the run goes on.');
  await expect
    .poll(async () => (await (await api(`/runs/${run!.id}`)).json()).status, { timeout: 20_000 })
    .toBe('completed');
  expect((await prompts()).at(-1)!.used).toContain(`Ada rewrote ${suffix}.`);
  const after = await sql<{ decided_by: string; decision: string }>(
    `SELECT decided_by, decision FROM svc_gate_decisions WHERE run_id = $1 ORDER BY id`,
    [run!.id],
  );
  expect(
    after.map((r) => `${r.decided_by === adaId ? 'Ada' : r.decided_by === ben.id ? 'Ben' : '?'}:${r.decision}`),
  ).toEqual(['Ada:edit', 'Ben:approve']);
  await benContext.close();
});

test('a gate nobody decides in time expires: the card shows its deadline, then the canvas marks it expired', async ({
  page,
}) => {
  const marker = `expiry-${randomUUID().slice(0, 8)}`;
  await openStudio(page, 'expiring-review');
  await script(words(`An analysis ${marker} that nobody reads in time.`));
  await startRun(page, `Review: ${marker}`);
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('gate-deadline')).toContainText('then it is rejected and the run ends.');
  await page.screenshot({ path: screenshotPath('approvals-expiry-deadline') });

  // No stream tells the studio: its check of the waiting gate finds the run ended by the deadline.
  await expect(page.getByTestId('run-status')).toContainText('✕ Run rejected', { timeout: 30_000 });
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'gate_expired');
  await expect(page.getByTestId('phase-mark-gate')).toHaveText('expired: rejected');
  await expect(phase(page, 'output')).toHaveAttribute('data-state', 'idle');
  const decision = page.getByTestId('transcript-decision');
  await expect(decision).toHaveAttribute('data-decision', 'expire');
  await expect(decision.getByTestId('decision-summary')).toHaveText(
    'Approve in time · Expired: rejected by its deadline rule',
  );
  await expect(page.getByTestId('approval-card')).toHaveCount(0);
  await expect(page.getByTestId('gate-decision')).toContainText('Expired: rejected by its deadline rule');
  await expect(page.getByTestId('thread-item').filter({ hasText: marker })).toContainText('Rejected');
  await page.screenshot({ path: screenshotPath('approvals-expired') });
});

test('a failed inbox load says what failed and offers Retry', async ({ page }) => {
  await openStudio(page);
  let fail = true;
  await page.route('**/approvals', (route) =>
    fail
      ? route.fulfill({ status: 503, json: { error: { code: 'unavailable', message: 'the approvals are resting' } } })
      : route.continue(),
  );
  await page.getByTestId('inbox-open').click();
  await expect(page.getByTestId('inbox-error')).toContainText(
    'The approvals waiting for you could not be loaded: the approvals are resting',
  );
  await expect(page.getByTestId('inbox-open')).toHaveAttribute('title', /could not be loaded/);
  await page.screenshot({ path: screenshotPath('approvals-inbox-error') });
  fail = false;
  await page.getByTestId('inbox-error').getByRole('button', { name: 'Retry' }).click();
  await expect(page.getByTestId('inbox-error')).toHaveCount(0);
  await expect(page.getByTestId('inbox-count')).toHaveText(/^\d+$/);
});

test('with a review longer than the window, the decision buttons are in view without scrolling, at 1440×900 and 1024×768', async ({
  page,
}) => {
  const marker = randomUUID().slice(0, 8);
  const paragraph = (n: number) =>
    `Finding ${n} of ${marker}: the loader reads its file twice when the cache is cold, and the second read can see ` +
    'a newer file than the first; read it once and pass the text down, and add a test that changes the file between.';
  await page.setViewportSize({ width: 1440, height: 900 });
  await openStudio(page);
  await script(words(Array.from({ length: 14 }, (_, i) => paragraph(i + 1)).join('\n\n')));
  await startRun(page, `Review: a long one ${marker}`);
  const card = page.getByTestId('approval-card');
  await expect(card).toBeVisible();
  for (const [width, height] of [
    [1440, 900],
    [1024, 768],
  ] as const) {
    await page.setViewportSize({ width, height });
    await expect(card.getByTestId('gate-approve')).toBeInViewport({ ratio: 1 });
    await page.screenshot({ path: screenshotPath(`approvals-long-${width}`) });
    await card.getByTestId('gate-respond').click();
    await expect(card.getByTestId('gate-respond-submit')).toBeInViewport({ ratio: 1 });
    await page.screenshot({ path: screenshotPath(`approvals-long-respond-${width}`) });
    await card.getByTestId('gate-respond-cancel').click();
  }
  // The whole review is edited in a box as tall as the window allows, its buttons in view under it.
  await card.getByTestId('gate-edit').click();
  const box = await card.getByTestId('gate-edit-text').boundingBox();
  expect(box!.height).toBeGreaterThanOrEqual(0.4 * 768);
  await expect(card.getByTestId('gate-edit-submit')).toBeInViewport({ ratio: 1 });
  await page.screenshot({ path: screenshotPath('approvals-long-edit-1024') });
  await card.getByTestId('gate-edit-cancel').click();
  await page.getByTestId('run-cancel').click();
});
