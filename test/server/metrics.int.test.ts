import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { getLogger } from '../../src-server/log';
import { useIntegrationServer } from '../helpers/integration';
import { parseMetrics, sample, type Sample } from '../helpers/metrics';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * GET /metrics as a scraper sees it: only METRICS_TOKEN opens it, and its series count what the runs of this file
 * did (in this process) and what the database holds (the whole cluster), against a real PostgreSQL and real runs.
 */
const ADMIN = 'metrics-test-admin-token';
const METRICS = 'metrics-test-scrape-token-0123456789';
const ctx = useIntegrationServer({
  server: {
    AUTH_ENABLED: 'true',
    SVC_API_TOKEN: ADMIN,
    METRICS_TOKEN: METRICS,
    // Webhooks to a receiver on loopback, tried again 0.2 s later.
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_BASE_S: '0.2',
  },
});

const get = (server: TestServer, headers: Record<string, string> = {}) => fetch(`${server.url}/metrics`, { headers });

async function scrape(server: TestServer = ctx.server): Promise<Sample[]> {
  const res = await get(server, { authorization: `Bearer ${METRICS}` });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseMetrics(await res.text());
}

/** A run read to its end or its gate; its id and thread from run_start. */
async function run(agent: string, body: Record<string, unknown>) {
  const events = await readEvents(await ctx.server.request(`/graphs/${agent}/run`, { method: 'POST', json: body }));
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { last: events.at(-1)!.data, runId: start.run_id };
}

describe('who may read /metrics', () => {
  it('answers 404 on a server without METRICS_TOKEN, whatever the request sends', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'true', SVC_API_TOKEN: ADMIN });
    try {
      const sent: Record<string, string>[] = [
        {},
        { authorization: `Bearer ${ADMIN}` },
        { authorization: `Bearer ${METRICS}` },
      ];
      for (const headers of sent) {
        const res = await get(server, headers);
        expect(res.status).toBe(404);
        expect((await res.json()).error.code).toBe('not_found');
      }
    } finally {
      await server.close();
    }
  });

  it('answers 401 without a token, with a wrong one, and with the API token or a personal access token', async () => {
    const made = await ctx.server.request('/me/tokens', { method: 'POST', json: { name: 'scraper?' } });
    const personal = ((await made.json()) as { token: string }).token;
    const sent: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${METRICS}x` },
      { authorization: `Bearer ${ADMIN}` },
      { authorization: `Bearer ${personal}` },
      { authorization: METRICS },
    ];
    for (const headers of sent) {
      const res = await get(ctx.server, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect((await res.json()).error.code).toBe('unauthorized');
    }
    expect((await get(ctx.server, { authorization: `Bearer ${METRICS}` })).status).toBe(200);
  });

  it('takes METRICS_TOKEN alone with authentication off too', async () => {
    const server = await ctx.start({ AUTH_ENABLED: 'false', METRICS_TOKEN: METRICS });
    try {
      expect((await get(server)).status).toBe(401);
      expect((await get(server, { authorization: `Bearer ${METRICS}` })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('masks METRICS_TOKEN in the log', () => {
    getLogger('svc.test').info(`a line that names ${METRICS}`);
    expect(ctx.server.logs.at(-1)).toContain('a line that names ***');
    expect(ctx.server.logs.join('\n')).not.toContain(METRICS);
  });

  it('is in the OpenAPI document as text/plain, under a token scheme of its own', async () => {
    const doc = (await (await ctx.server.request('/openapi.json')).json()) as {
      paths: Record<string, { get: { security: object[]; responses: Record<string, { content?: object }> } }>;
      components: { securitySchemes: Record<string, object> };
    };
    const op = doc.paths['/metrics']!.get;
    expect(op.security).toEqual([{ metricsToken: [] }]);
    expect(doc.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    // Its token is counted as any other when the server limits requests (docs/operations.md#rate-limits).
    expect(Object.keys(op.responses)).toEqual(['200', '401', '403', '404', '429', 'default']);
    expect(op.responses['200']!.content).toEqual({ 'text/plain': { schema: { type: 'string' } } });
  });
});

describe('what /metrics counts', () => {
  it('counts the legs, phases, model calls and tokens of this process, and the runs in progress of the cluster', async () => {
    const before = await scrape();
    ctx.model.reply(['one ', 'two ', 'three']);
    const done = [await run('summary', { message: 'Summarise the repository' })];
    done.push(await run('summary', { message: 'Summarise it again' }));
    const gated = await run('review', { message: 'Review: rename the config loader' });
    expect(done.map((r) => r.last.type)).toEqual(['run_done', 'run_done']);
    expect(gated.last.type).toBe('gate_waiting');
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

    expect(delta('svc_run_leg_duration_seconds_count', { agent: 'summary', outcome: 'completed' })).toBe(2);
    expect(delta('svc_run_leg_duration_seconds_count', { agent: 'review', outcome: 'waiting_approval' })).toBe(1);
    expect(delta('svc_phase_duration_seconds_count', { agent: 'summary', phase: 'execute', status: 'completed' })).toBe(
      2,
    );
    expect(delta('svc_phase_duration_seconds_count', { agent: 'review', phase: 'analysis', status: 'completed' })).toBe(
      1,
    );
    // Three model calls per summary, two before the review's gate; the tokens as the node rows stored them.
    const model = { provider: 'local', model: 'fake-model:latest' };
    expect(delta('svc_model_call_duration_seconds_count', { ...model, outcome: 'ok' })).toBe(8);
    expect(delta('svc_local_queue_wait_seconds_count')).toBe(8);
    const { rows } = await ctx.server.pool.query<{ input: number; output: number }>(
      `SELECT sum(prompt_tokens)::integer AS input, sum(output_tokens)::integer AS output
         FROM svc_run_nodes WHERE run_id = ANY($1)`,
      [[...done, gated].map((r) => r.runId)],
    );
    expect(rows[0]!.output).toBe(8 * 3);
    expect(delta('svc_model_tokens_total', { ...model, type: 'output' })).toBe(rows[0]!.output);
    expect(delta('svc_model_tokens_total', { ...model, type: 'input' })).toBe(rows[0]!.input);

    // Cluster-wide: the database's runs in progress, every catalog agent shown, those without any at 0.
    expect(sample(after, 'svc_runs_in_progress', { agent: 'review', status: 'waiting_approval' })).toBe(1);
    expect(sample(after, 'svc_runs_in_progress', { agent: 'summary', status: 'running' })).toBe(0);
    expect(sample(after, 'svc_gates_waiting')).toBe(1);
    expect(sample(after, 'svc_gate_oldest_wait_seconds')).toBeGreaterThan(0);
    expect(sample(after, 'svc_gate_oldest_wait_seconds')).toBeLessThan(60);
    expect(sample(after, 'svc_local_queue_active_calls')).toBe(0);
    expect(sample(after, 'svc_local_queue_waiting_calls')).toBe(0);
    expect(sample(after, 'svc_local_queue_slots')).toBe(2);
    expect(sample(after, 'svc_cluster_read_success')).toBe(1);
    expect(sample(after, 'svc_run_events_unstored')).toBe(0);
    expect(sample(after, 'svc_run_legs', { state: 'active' })).toBe(0);
    expect(sample(after, 'process_cpu_seconds_total')).toBeGreaterThan(0);

    // Another process on the same database: the same cluster, none of this process's counts.
    const other = await ctx.start({ METRICS_TOKEN: METRICS });
    try {
      const there = await scrape(other);
      expect(sample(there, 'svc_runs_in_progress', { agent: 'review', status: 'waiting_approval' })).toBe(1);
      expect(sample(there, 'svc_gates_waiting')).toBe(1);
      expect(sample(there, 'svc_run_leg_duration_seconds_count', { agent: 'summary', outcome: 'completed' })).toBe(
        undefined,
      );
    } finally {
      await other.close();
    }

    // The cancel of the waiting run ends it in the database: the cluster's series follow.
    const cancelled = await ctx.server.request(`/runs/${gated.runId}/cancel`, { method: 'POST', json: {} });
    expect(cancelled.status).toBe(200);
    const later = await scrape();
    expect(sample(later, 'svc_runs_in_progress', { agent: 'review', status: 'waiting_approval' })).toBe(0);
    expect(sample(later, 'svc_gates_waiting')).toBe(0);
    expect(sample(later, 'svc_gate_oldest_wait_seconds')).toBe(0);
  });

  it('names a model outside the catalog "other", and never by the name the run gave it', async () => {
    const before = await scrape();
    ctx.model.reply(['fine']);
    expect((await run('summary', { message: 'on a listed model', model: 'llama3.2' })).last.type).toBe('run_done');
    expect(
      (await run('summary', { message: 'on a model nobody has', model: 'local:made-up-model-7b' })).last.type,
    ).toBe('run_error');
    const text = await (await get(ctx.server, { authorization: `Bearer ${METRICS}` })).text();
    const after = parseMetrics(text);
    const count = (samples: Sample[], labels: Record<string, string>) =>
      sample(samples, 'svc_model_call_duration_seconds_count', { provider: 'local', ...labels }) ?? 0;
    expect(
      count(after, { model: 'llama3.2:latest', outcome: 'ok' }) -
        count(before, { model: 'llama3.2:latest', outcome: 'ok' }),
    ).toBe(3);
    expect(
      count(after, { model: 'other', outcome: 'error' }) - count(before, { model: 'other', outcome: 'error' }),
    ).toBe(1);
    expect(text).not.toContain('made-up-model');
    const errors = (samples: Sample[]) =>
      sample(samples, 'svc_run_leg_duration_seconds_count', { agent: 'summary', outcome: 'error' }) ?? 0;
    expect(errors(after) - errors(before)).toBe(1);
  });

  it('counts the run streams open in this process', async () => {
    ctx.model.reply(['slow ', 'tokens ', 'here ', 'and ', 'more'], 300);
    const res = await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message: 'slowly' } });
    // Read until the first token; look while the stream is open; then drop it, as a client that goes away.
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    for (let read = ''; !read.includes('event: token');) read += (await reader.read()).value ?? '';
    // The streams of earlier tests close as their answers end: at most a moment later.
    const streamsOpen = (expected: number) =>
      until(async () => (sample(await scrape(), 'svc_sse_streams_open') === expected ? true : undefined), 5000);
    await streamsOpen(1);
    await reader.cancel();
    await streamsOpen(0);
  });

  it('counts webhook attempts by what they did to their delivery, and the deliveries pending', async () => {
    const answers: number[] = [];
    const receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        answers.push(answers.length === 0 ? 500 : 200);
        res.writeHead(answers.at(-1)!).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const org = await (await ctx.server.request('/orgs', { method: 'POST', json: { name: 'Metrics' } })).json();
    const team = await (
      await ctx.server.request('/teams', { method: 'POST', json: { name: 'Team', parent_id: org.id } })
    ).json();
    const project = await (
      await ctx.server.request('/projects', { method: 'POST', json: { name: 'Project', parent_id: team.id } })
    ).json();
    const hook = await ctx.server.request('/webhooks', {
      method: 'POST',
      json: { url, events: ['run.completed'], project_id: project.id },
    });
    expect(hook.status).toBe(201);

    const before = await scrape();
    ctx.model.reply(['done']);
    expect((await run('summary', { message: 'tell the hook', project_id: project.id })).last.type).toBe('run_done');
    await until(async () => (answers.length === 2 ? true : undefined));
    const attempts = (samples: Sample[], outcome: string) =>
      sample(samples, 'svc_webhook_attempts_total', { outcome }) ?? 0;
    // A scrape reads the database before it reads this process's counters: the two agree once the sender is done.
    const after = await until(async () => {
      const samples = await scrape();
      const settled = sample(samples, 'svc_webhook_deliveries_pending') === 0;
      return settled && attempts(samples, 'delivered') === attempts(before, 'delivered') + 1 ? samples : undefined;
    });
    expect(attempts(after, 'retried') - attempts(before, 'retried')).toBe(1);
    expect(attempts(after, 'failed') - attempts(before, 'failed')).toBe(0);
    expect(sample(after, 'svc_webhook_oldest_pending_seconds')).toBe(0);
  });
});
