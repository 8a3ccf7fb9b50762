import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import { DEFAULT_GENERATED_DIR } from '../../src-server/assets/catalog';
import type { RunAccepted, RunDetail, Thread } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import type { ThreadExport } from '../../src-server/contracts/thread-transfer';
import { createDatabase, type TestDatabase } from '../helpers/postgres';
import { spawnServer, type ServerProcess } from '../helpers/process';
import { api, baseUrl, expect, screenshotPath, script, signInByLink, test, token, words } from './studio.fixtures';

/**
 * A thread exported from one installation and imported into another (docs/http-api.md#export-and-import-of-a-thread)
 * reads the same in the studio of each: the suite's server is install A; install B is a server of this spec's own,
 * on a database of its own, with the same stand-in model and the shipped catalog (which holds change-review, the
 * agent with a gate the approval specs use, as A's catalog does). A change-review thread with one run approved and
 * completed is made on A through the API, exported, imported into B's default project, and opened in both studios:
 * what a person reads there is read with the same locators on both pages and compared. On B, the imported history is
 * not continued: the studio offers no decision, and a message to the thread shows the server's refusal.
 */

const TOKEN_B = `thread-import-b-token-${randomUUID()}`;
const SECRET_B = `thread-import-b-session-secret-${randomUUID()}`;

let databaseB: TestDatabase | undefined;
let serverB: ServerProcess | undefined;

/** The server of TEST_DATABASE_URL, or (without it) the one the suite's own database is on. */
function databaseServerUrl(): string {
  if (process.env.TEST_DATABASE_URL) return process.env.TEST_DATABASE_URL;
  const url = new URL(process.env.E2E_DATABASE_URL!);
  url.pathname = '/postgres';
  return url.toString();
}

test.beforeAll(async () => {
  test.setTimeout(120_000);
  databaseB = await createDatabase(databaseServerUrl(), 'svc_e2e_import');
  serverB = await spawnServer({
    GENERATED_DIR: DEFAULT_GENERATED_DIR,
    DATABASE_URL: databaseB.url,
    LOCAL_LLM_BASE: process.env.E2E_MODEL_URL!,
    DEFAULT_MODEL: 'fake-model',
    AUTH_ENABLED: 'true',
    SVC_API_TOKEN: TOKEN_B,
    SESSION_SECRET: SECRET_B,
  });
});

test.afterAll(async () => {
  try {
    await serverB?.stop();
  } finally {
    await databaseB?.drop();
  }
});

/** A request to install B with its own token. */
function apiB(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  return fetch(`${serverB!.url}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${TOKEN_B}`,
      ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
  });
}

async function json<T>(res: Response | Promise<Response>, status: number): Promise<T> {
  const answer = await res;
  const text = await answer.text();
  expect(answer.status, text).toBe(status);
  return JSON.parse(text) as T;
}

const runStatus = async (runId: string) => (await json<RunDetail>(api(`/runs/${runId}`), 200)).status;

/**
 * Everything a person reads of the thread on screen, by the same locators on either install: its row in the thread
 * list, the run's status line (its status word and model; its id differs by design, and its cost too: model usage is
 * left out of an export), the phases as the canvas marks them, and the transcript: each phase's title and output in
 * order, each decision at the gate (what, by whom, with which role, the reason) with its time as recorded rather
 * than "3 min ago", which depends on when it is read.
 */
async function whatOnePersonReads(page: Page, threadId: string) {
  const row = page.locator(`[data-testid="thread-row"][data-thread-id="${threadId}"]`);
  await expect(row).toHaveCount(1);
  const transcript = page.getByTestId('transcript');
  const decisions = page.getByTestId('transcript-decision');
  return {
    thread: {
      name: await row.getByTestId('thread-name').innerText(),
      status: await row.getByTestId('thread-status').innerText(),
      dataStatus: await row.getAttribute('data-status'),
    },
    run: {
      status: await page.getByTestId('run-status').locator('span').first().innerText(),
      model: await page.getByTestId('run-model-shown').innerText(),
    },
    canvas: await page.evaluate(() =>
      [...document.querySelectorAll('[data-testid^="phase-"][data-state]')].map((el) => [
        el.getAttribute('data-testid'),
        el.getAttribute('data-state'),
      ]),
    ),
    canvasMarks: await page.locator('[data-testid^="phase-mark-"]').allInnerTexts(),
    phaseTitles: await transcript.getByRole('heading', { level: 3 }).allInnerTexts(),
    phases: await transcript
      .locator('[data-format]')
      .evaluateAll((els) => els.map((el) => [el.getAttribute('data-testid'), (el as HTMLElement).innerText.trim()])),
    decisions: {
      kinds: await decisions.evaluateAll((els) => els.map((el) => el.getAttribute('data-decision'))),
      summaries: (await decisions.getByTestId('decision-summary').allInnerTexts()).map((t) =>
        t.replace(/\s+/g, ' ').trim(),
      ),
      reasons: await decisions.getByTestId('decision-reason').allInnerTexts(),
      times: await decisions.locator('time').evaluateAll((els) => els.map((el) => el.getAttribute('datetime'))),
    },
    /** The whole transcript's text, each time as recorded: nothing more nor less on either side. */
    transcript: await transcript.evaluate((el) => {
      const copy = el.cloneNode(true) as HTMLElement;
      for (const time of copy.querySelectorAll('time')) time.textContent = time.getAttribute('datetime');
      return (copy.textContent ?? '').replace(/\s+/g, ' ').trim();
    }),
  };
}

test('a thread exported from one install and imported into another reads the same in the studio of each', async ({
  page,
  browser,
}) => {
  test.setTimeout(120_000);
  const marker = `carried-${randomUUID().slice(0, 8)}`;
  const message = `Review: the thread carried to another install ${marker}`;
  const analysis = `Analysis ${marker}: the loader rename is safe to ship.`;
  const reason = `the migration note is there ${marker}`;

  // Install A: a change-review run stops at its gate, is approved with a reason, and completes. The stand-in answers
  // both model phases (intake, analysis) with the scripted text; the output phase publishes the approved analysis.
  await script(words(analysis));
  const started = await json<RunAccepted>(
    api('/agents/change-review/runs', { method: 'POST', json: { message } }),
    202,
  );
  const { run_id: runA, thread_id: threadA } = started;
  await expect.poll(() => runStatus(runA), { timeout: 30_000 }).toBe('waiting_approval');
  await json<RunAccepted>(api(`/threads/${threadA}/gates/gate/approve`, { method: 'POST', json: { reason } }), 202);
  await expect.poll(() => runStatus(runA), { timeout: 30_000 }).toBe('completed');

  // Exported from A, imported into B's default project: a new thread there, saying where it came from.
  const document = await json<ThreadExport>(api(`/threads/${threadA}/export`), 200);
  expect(document.runs.map((r) => r.status)).toEqual(['completed']);
  expect(document.decisions.map((d) => d.decision)).toEqual(['approve']);
  const imported = await json<Thread>(
    apiB(`/projects/${DEFAULT_PROJECT_ID}/threads/import`, { method: 'POST', json: document }),
    201,
  );
  const threadB = imported.id;
  expect(threadB).not.toBe(threadA);
  expect(imported.imported?.from_thread_id).toBe(threadA);
  const runsB = await json<{ id: string }[]>(apiB(`/threads/${threadB}/runs`), 200);
  expect(runsB).toHaveLength(1);
  const runB = runsB[0]!.id;

  // Each studio opened on its thread by a link, signed in with its own install's token, in a browser context of its
  // own (another origin, another token).
  const contextB = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const pageB = await contextB.newPage();
    await signInByLink(page, `${baseUrl()}/ui?thread=${threadA}#token=${token()}`, page.getByTestId('run-id'));
    await signInByLink(pageB, `${serverB!.url}/ui?thread=${threadB}#token=${TOKEN_B}`, pageB.getByTestId('run-id'));
    for (const [p, runId] of [
      [page, runA],
      [pageB, runB],
    ] as const) {
      await expect(p.getByTestId('run-id')).toHaveAttribute('data-id', runId);
      await expect(p.getByTestId('run-status')).toContainText('✓ Run complete');
      await expect(p.getByTestId('transcript-decision')).toHaveCount(1);
      await expect(p.getByTestId('transcript-output')).toContainText(analysis);
    }

    const onA = await whatOnePersonReads(page, threadA);
    const onB = await whatOnePersonReads(pageB, threadB);
    // What A shows is the run made above, so that equal is not two empty pages.
    expect(onA.thread).toEqual({ name: message, status: 'Completed', dataStatus: 'completed' });
    expect(onA.run).toEqual({ status: '✓ Run complete', model: 'fake-model' });
    expect(onA.phases).toEqual([
      ['transcript-intake', analysis],
      ['transcript-analysis', analysis],
      ['transcript-output', analysis],
    ]);
    // The phases' names as the catalog has them (the studio's style sets them in capitals).
    expect(onA.phaseTitles.map((t) => t.toLowerCase())).toEqual(['read the change', 'review', 'publish review']);
    expect(onA.decisions.kinds).toEqual(['approve']);
    expect(onA.decisions.summaries).toEqual(['Approve publishing · Approved by the API token']);
    expect(onA.decisions.reasons).toEqual([`“${reason}”`]);
    expect(onA.decisions.times.map((t) => Date.parse(t ?? ''))).toEqual([
      Date.parse(document.decisions[0]!.decided_at),
    ]);
    expect(onA.canvas).toEqual(
      expect.arrayContaining([
        ['phase-intake', 'completed'],
        ['phase-analysis', 'completed'],
        ['phase-gate', 'gate_passed'],
        ['phase-output', 'completed'],
      ]),
    );
    // A plain approval puts no mark beside the gate: its state (passed) says it.
    expect(onA.canvasMarks).toEqual([]);
    // B reads the same, text for text.
    expect(onB).toEqual(onA);

    await page.screenshot({ path: screenshotPath('thread-import-a') });
    await pageB.screenshot({ path: screenshotPath('thread-import-b') });

    // On B nothing of the imported thread goes on: no decision is offered (its run ended before the export), and a
    // message to the thread (the run form offers to continue it, as for any thread opened: the studio marks no thread
    // as imported) is refused by the server, its words shown; nothing was started.
    await expect(pageB.getByTestId('approval-card')).toHaveCount(0);
    await expect(pageB.getByTestId('gate-approve')).toHaveCount(0);
    await expect(pageB.getByTestId('run-cancel')).toHaveCount(0);
    await pageB.getByTestId('run-continue-thread').check();
    await pageB.getByTestId('run-message').fill(`and the tests? ${marker}`);
    await pageB.getByTestId('run-submit').click();
    await expect(pageB.getByTestId('request-error')).toContainText(`thread ${threadB} is imported read-only history`);
    expect(await json<{ id: string }[]>(apiB(`/threads/${threadB}/runs`), 200)).toHaveLength(1);
    await expect(pageB.locator(`[data-testid="thread-row"][data-thread-id="${threadB}"]`)).toHaveAttribute(
      'data-status',
      'completed',
    );
  } finally {
    await contextB.close();
  }
});
