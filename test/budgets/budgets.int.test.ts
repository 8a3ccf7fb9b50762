import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Budget } from '../../src-server/contracts/budgets';
import type { RunAccepted, RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import type { WebhookPayload } from '../../src-server/contracts/webhooks';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Budgets (docs/operations.md#budgets) on a real server and PostgreSQL, with the cloud stand-in priced at a dollar per
 * thousand tokens and the Ollama stand-in for the local model: the warning at its level (an event on the stream of the
 * run whose call reaches it, and a webhook), a new run refused once a budget is spent, a running run stopped before
 * its next call, and a token budget that counts a local model's calls.
 */
const API_TOKEN = 'budget-test-admin-token-0123456789';
const PRICES = { cloud_c: { input_per_mtok: 1000, output_per_mtok: 1000 } };
const CLOUD = 'cloud_c:gpt-test';

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let receiver: http.Server;
const received: WebhookPayload[] = [];

beforeAll(async () => {
  server = await ctx.start({
    AUTH_ENABLED: 'true',
    SESSION_SECRET: 'a-session-secret-for-the-budget-tests-0123',
    SVC_API_TOKEN: API_TOKEN,
    MODEL_PRICES: JSON.stringify(PRICES),
    CLOUD_C_API_KEY: 'openai-test-key',
    CLOUD_C_BASE_URL: `${ctx.model.url}/v1`,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push(JSON.parse(body) as WebhookPayload);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await server?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

const auth = { authorization: `Bearer ${API_TOKEN}` };
const call = (path: string, method = 'GET', json?: object) =>
  server.request(path, { method, headers: auth, ...(json && { json }) });

async function json<T>(response: Response, status: number): Promise<T> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  return (status === 204 ? undefined : JSON.parse(body)) as T;
}

async function settled(runId: string): Promise<RunDetail> {
  return until(async () => {
    const run = await json<RunDetail>(await call(`/runs/${runId}/wait?timeout_s=10`), 200);
    return run.status === 'running' || run.status === 'queued' ? undefined : run;
  });
}

/** A review run (intake, analysis, a gate, output) on `model`, stopped at its gate. */
async function atGate(projectId: string, model: string): Promise<RunAccepted> {
  const started = await json<RunAccepted>(
    await call('/agents/review/runs', 'POST', { message: 'Review the change', model, project_id: projectId }),
    202,
  );
  expect((await settled(started.run_id)).status).toBe('waiting_approval');
  return started;
}

const budgetsOf = async (projectId: string) =>
  (await json<{ budgets: Budget[] }>(await call(`/projects/${projectId}/budgets`), 200)).budgets;

async function newProject(name: string): Promise<string> {
  const org = await json<{ id: string }>(await call('/orgs', 'POST', { name: `${name} org` }), 201);
  const team = await json<{ id: string }>(
    await call('/teams', 'POST', { name: `${name} team`, parent_id: org.id }),
    201,
  );
  const project = await json<{ id: string }>(await call('/projects', 'POST', { name, parent_id: team.id }), 201);
  return project.id;
}

describe('a money budget on a priced cloud model', () => {
  it('warns at its level on the stream and by webhook, refuses new runs once spent, and stops a running run', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    await json(
      await call('/webhooks', 'POST', {
        url,
        project_id: DEFAULT_PROJECT_ID,
        events: ['budget.warning', 'budget.exceeded'],
      }),
      201,
    );
    ctx.model.reply(['The change ', 'looks ', 'right.']);
    const first = await atGate(DEFAULT_PROJECT_ID, CLOUD);
    const second = await atGate(DEFAULT_PROJECT_ID, CLOUD);

    // The spend so far counts, though the budget is set after it: 90% of the budget, past its 80% warning level.
    const spent = (await json<{ total: { cost_usd: number } }>(await call('/usage'), 200)).total.cost_usd;
    expect(spent).toBeGreaterThan(0);
    const amount = Number((spent / 0.9).toFixed(6));
    const budget = await json<Budget>(
      await call(`/projects/${DEFAULT_PROJECT_ID}/budget`, 'PUT', { period: 'day', amount_usd: amount }),
      200,
    );
    expect(budget).toMatchObject({ period: 'day', amount_usd: amount, tokens: null, warn_at: 0.8, status: 'warning' });
    expect(budget.spent_usd).toBeCloseTo(spent, 9);
    expect(Date.parse(budget.period_end) - Date.parse(budget.period_start)).toBe(24 * 3600 * 1000);

    // The first run goes on: its output phase's call sees the warning level first and says so on its stream.
    await json(await call(`/threads/${first.thread_id}/gates/gate/approve`, 'POST', { reason: 'fine' }), 202);
    expect((await settled(first.run_id)).status).toBe('completed');
    const events = await readEvents(await call(`/runs/${first.run_id}/stream`));
    const warnings = events.filter((e) => e.name === 'budget_warning').map((e) => e.data);
    expect(warnings).toEqual([
      {
        type: 'budget_warning',
        budget_id: budget.id,
        message: expect.stringMatching(
          /^the daily budget of project "Default project" is at 80% or more \(\$0\.\d+ of \$/,
        ),
      },
    ]);
    const warned = await until(async () => received.find((p) => p.type === 'budget.warning'));
    expect(warned.data).toMatchObject({ id: budget.id, project_id: DEFAULT_PROJECT_ID, status: 'warning' });

    // Its call took the spend past the budget: a new run is refused, naming the budget, until the day ends.
    const [after] = await budgetsOf(DEFAULT_PROJECT_ID);
    expect(after!.status).toBe('exceeded');
    const refused = await call('/agents/review/runs', 'POST', { message: 'One more', model: CLOUD });
    const body = await json<{ error: { code: string; message: string } }>(refused, 429);
    expect(body.error.code).toBe('budget_exceeded');
    expect(body.error.message).toMatch(
      /^BudgetExceeded: the daily budget of project "Default project" is spent \(\$\d+\.\d+ of \$\d+\.\d+\); it starts again at \d{4}-\d\d-\d\dT00:00:00\.000Z$/,
    );
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
    const exceeded = await until(async () => received.find((p) => p.type === 'budget.exceeded'));
    expect(exceeded.data).toMatchObject({ id: budget.id, status: 'exceeded' });

    // The second run, at its gate meanwhile, is approved: it stops before its next model call.
    await json(await call(`/threads/${second.thread_id}/gates/gate/approve`, 'POST', { reason: 'fine' }), 202);
    const stopped = await settled(second.run_id);
    expect(stopped.status).toBe('error');
    expect(stopped.error_detail).toMatch(/^BudgetExceeded: the daily budget of project "Default project" is spent/);
    // Each warning once per period, whatever many calls and processes see the level.
    expect(received.filter((p) => p.type === 'budget.warning')).toHaveLength(1);
    expect(received.filter((p) => p.type === 'budget.exceeded')).toHaveLength(1);

    // Removed, the budget limits nothing.
    await json(await call(`/budgets/${budget.id}`, 'DELETE'), 204);
    const again = await json<RunAccepted>(
      await call('/agents/review/runs', 'POST', { message: 'Now it may', model: CLOUD }),
      202,
    );
    expect((await settled(again.run_id)).status).toBe('waiting_approval');
  });
});

describe('a token budget', () => {
  it('counts a local model’s tokens, and refuses its next run once spent', async () => {
    const project = await newProject('Token budget');
    ctx.model.reply(['Local ', 'tokens.']);
    const run = await atGate(project, 'fake-model');
    const detail = await json<RunDetail>(await call(`/runs/${run.run_id}`), 200);
    const tokens = detail.usage!.input_tokens + detail.usage!.output_tokens;
    expect(tokens).toBeGreaterThan(0);
    // A money budget does not count a model without a price.
    const money = await json<Budget>(
      await call(`/projects/${project}/budget`, 'PUT', { period: 'month', amount_usd: 0.000001 }),
      200,
    );
    expect(money).toMatchObject({ spent_usd: 0, status: 'ok' });
    const budget = await json<Budget>(
      await call(`/projects/${project}/budget`, 'PUT', { period: 'day', tokens, warn_at: 0.5 }),
      200,
    );
    expect(budget).toMatchObject({ spent_tokens: tokens, status: 'exceeded', amount_usd: null });
    const refused = await json<{ error: { code: string; message: string } }>(
      await call('/agents/review/runs', 'POST', { message: 'More', model: 'fake-model', project_id: project }),
      429,
    );
    expect(refused.error).toEqual({
      code: 'budget_exceeded',
      message: expect.stringMatching(
        new RegExp(
          `^BudgetExceeded: the daily budget of project "Token budget" is spent \\(${tokens.toLocaleString('en')} of ${tokens.toLocaleString('en')} tokens\\)`,
        ),
      ),
    });
    // Another project of the same server is not limited by it.
    ctx.model.reply(['Elsewhere.']);
    const elsewhere = await json<RunAccepted>(
      await call('/agents/review/runs', 'POST', { message: 'Elsewhere', model: 'fake-model' }),
      202,
    );
    expect((await settled(elsewhere.run_id)).status).toBe('waiting_approval');
  });

  it('is refused in words: no limit, a bad time zone, a warning level out of range', async () => {
    const bad = async (body: object, pattern: RegExp) => {
      const answer = await json<{ error: { message: string } }>(
        await call(`/projects/${DEFAULT_PROJECT_ID}/budget`, 'PUT', body),
        400,
      );
      expect(answer.error.message).toMatch(pattern);
    };
    await bad({ period: 'day' }, /give amount_usd, tokens, or both/);
    await bad({ period: 'day', tokens: 10, time_zone: 'Mars/Olympus' }, /is not an IANA time zone name/);
    await bad({ period: 'week', tokens: 10 }, /period/);
    await bad({ period: 'day', tokens: 10, warn_at: 1.5 }, /warn_at/);
    await json(await call(`/budgets/00000000-0000-4000-8000-00000000abcd`, 'DELETE'), 404);
  });
});
