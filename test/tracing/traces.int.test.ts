import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunAccepted, RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { numberedTokens } from '../fixtures/fake-models';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';
import type { ServerProcess } from '../helpers/process';
import { requestServer } from '../helpers/request';
import { until } from '../helpers/until';

/**
 * A run's trace as a collector receives it (docs/observability.md#traces): the server as processes of their own,
 * exporting with OpenTelemetry's SDK over OTLP/HTTP's JSON encoding to a receiver in this test.
 */
const ctx = useIntegrationServer({ server: false });
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let catalog: string;
let project: string;
let db: pg.Pool;
const servers: ServerProcess[] = [];

/** These tests start server processes of their own, and kill one: more than a test's default time on a busy CI. */
const SPAWNING_TEST_MS = 90_000;
const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_SPAN = '00f067aa0ba902b7';

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  catalog = await writeFixtureCatalog([toolAgent]);
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'traces-'));
  db = new pg.Pool({ connectionString: ctx.db.url, max: 2 });
});

afterAll(async () => {
  for (const server of servers) await server.stop();
  await db?.end();
  await receiver?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
  fs.rmSync(project, { recursive: true, force: true });
});

async function spawn(extra: Record<string, string> = {}) {
  const server = await ctx.spawn({ ...receiver.env, GENERATED_DIR: catalog, RUN_LEASE_S: '2', ...extra });
  servers.push(server);
  return server;
}

const ofTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const durationMs = (s: ReceivedSpan) => Number(s.endNs - s.startNs) / 1e6;

async function storedTrace(runId: string): Promise<string> {
  const { rows } = await db.query<{ trace_context: string }>('SELECT trace_context FROM svc_runs WHERE id = $1', [
    runId,
  ]);
  return rows[0]!.trace_context;
}

describe('traces', () => {
  it(
    'a run with a tool call and a gate is one trace under the request’s traceparent, with GenAI attributes and its wait',
    async () => {
      const server = await spawn();
      ctx.model.toolTurns = [[{ name: 'mock__echo', arguments: { text: 'hello from the tool' } }]];
      ctx.model.reply(['The ', 'analysis.']);
      const started = await requestServer(server.url, '/agents/tool-review/runs', {
        method: 'POST',
        json: { message: 'review with a tool', project_path: project },
        headers: { traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01` },
      });
      expect(started.status).toBe(202);
      const run = (await started.json()) as RunAccepted;
      const wait = async () =>
        (await (await requestServer(server.url, `/runs/${run.run_id}/wait?timeout_s=30`)).json()) as RunDetail;
      expect((await wait()).status).toBe('waiting_approval');
      expect(await storedTrace(run.run_id)).toMatch(new RegExp(`^00-${INCOMING_TRACE}-[0-9a-f]{16}-01$`));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const approved = await requestServer(server.url, `/threads/${run.thread_id}/gates/gate/approve`, {
        method: 'POST',
        json: { reason: 'traced' },
      });
      expect(approved.status).toBe(202);
      expect((await wait()).status).toBe('completed');

      const spans = await until(async () => {
        const all = ofTrace(INCOMING_TRACE);
        return named(all, 'invoke_agent tool-review').length === 2 && named(all, 'phase output').length === 1
          ? all
          : undefined;
      });
      // The root: the run's acceptance, a child of the caller's span.
      const [root] = named(spans, 'run tool-review');
      expect(root).toMatchObject({ parentSpanId: INCOMING_SPAN, service: 'agent-workflow-service' });
      expect(root!.attributes).toMatchObject({ 'gen_ai.agent.name': 'tool-review', 'svc.run.id': run.run_id });
      // Two legs (to the gate, and after the decision), each a child of the root.
      const legs = named(spans, 'invoke_agent tool-review');
      for (const leg of legs) {
        expect(leg.parentSpanId).toBe(root!.spanId);
        expect(leg.attributes).toMatchObject({
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.conversation.id': run.thread_id,
        });
      }
      expect(legs.map((l) => l.attributes['svc.leg.outcome']).sort()).toEqual(['completed', 'waiting_approval']);
      // Phases under their leg; the model calls and the tool call under their phase.
      const intake = named(spans, 'phase intake')[0]!;
      expect(legs.map((l) => l.spanId)).toContain(intake.parentSpanId);
      const chats = spans.filter((s) => s.name === 'chat fake-model');
      expect(chats.length).toBeGreaterThanOrEqual(3);
      const firstChat = chats.find((c) => c.parentSpanId === intake.spanId)!;
      expect(firstChat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'ollama',
        'gen_ai.request.model': 'fake-model',
        'gen_ai.response.model': 'fake-model',
        'gen_ai.response.finish_reasons': ['stop'],
      });
      expect(firstChat.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
      expect(firstChat.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
      // No prompt or answer unless a setting asks.
      expect(firstChat.attributes['gen_ai.input.messages']).toBeUndefined();
      const tool = named(spans, 'execute_tool mock.echo')[0]!;
      expect(tool.parentSpanId).toBe(intake.spanId);
      expect(tool.attributes).toMatchObject({
        'gen_ai.tool.name': 'mock.echo',
        'gen_ai.operation.name': 'execute_tool',
      });
      // The wait at the gate: its own span, from when the run stopped (as stored) to the decision.
      const waited = named(spans, 'wait gate gate')[0]!;
      expect(waited.parentSpanId).toBe(root!.spanId);
      expect(waited.attributes).toMatchObject({ 'svc.stop.decision': 'approve', 'svc.stop.kind': 'gate' });
      expect(durationMs(waited)).toBeGreaterThanOrEqual(900);
      const { rows } = await db.query<{ since: string }>(
        `SELECT n.entered_at AS since FROM svc_run_nodes n WHERE n.run_id = $1 AND n.node_id = 'gate' ORDER BY n.id LIMIT 1`,
        [run.run_id],
      );
      expect(Math.abs(Number(waited.startNs / 1_000_000n) - Number(rows[0]!.since) * 1000)).toBeLessThan(1000);
    },
    SPAWNING_TEST_MS,
  );

  it(
    'a run taken over by another process after its own died goes on in the same trace',
    async () => {
      const [first, second] = [await spawn(), await spawn()];
      ctx.model.reply(numberedTokens(60, 'k'), 20);
      const started = await requestServer(first.url, '/agents/summary/runs', {
        method: 'POST',
        json: { message: 'a run whose process dies' },
      });
      const run = (await started.json()) as RunAccepted;
      const traceId = (await storedTrace(run.run_id)).split('-')[1]!;
      const owner = async () => {
        const { rows } = await db.query<{ owner_id: string | null }>('SELECT owner_id FROM svc_runs WHERE id = $1', [
          run.run_id,
        ]);
        return rows[0]?.owner_id ?? undefined;
      };
      const pid = Number((await until(owner)).split('-')[0]);
      const executing = [first, second].find((s) => s.child.pid === pid)!;
      const survivor = executing === first ? second : first;
      executing.child.kill('SIGKILL');
      const done = (await (
        await requestServer(survivor.url, `/runs/${run.run_id}/wait?timeout_s=60`)
      ).json()) as RunDetail;
      expect(done.status).toBe('completed');
      const takeover = await until(async () =>
        ofTrace(traceId).find(
          (s) => s.name === 'invoke_agent summary' && s.attributes['svc.run.attempt'] === 2 && s.endNs > 0n,
        ),
      );
      expect(takeover.attributes).toMatchObject({ 'svc.run.id': run.run_id, 'svc.leg.outcome': 'completed' });
      expect(ofTrace(traceId).filter((s) => s.name === 'phase summarize')).not.toHaveLength(0);
    },
    SPAWNING_TEST_MS,
  );

  it(
    "a webhook delivery about a run continues the run's trace, and tells its receiver (traceparent); content on request",
    async () => {
      const received: { traceparent: string | undefined; type: string }[] = [];
      const hooks = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const { type } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string };
          received.push({ traceparent: req.headers.traceparent as string | undefined, type });
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
      // Any process on the database sends deliveries: only this test's, which may reach a receiver on loopback.
      for (const other of servers.splice(0)) await other.stop();
      try {
        const server = await spawn({
          WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
          OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
        });
        const { port } = hooks.address() as AddressInfo;
        const hook = await requestServer(server.url, '/webhooks', {
          method: 'POST',
          json: { url: `http://127.0.0.1:${port}/hook`, events: ['run.completed'], project_id: DEFAULT_PROJECT_ID },
        });
        expect(hook.status).toBe(201);
        ctx.model.reply(['done']);
        const started = await requestServer(server.url, '/agents/summary/runs', {
          method: 'POST',
          json: { message: 'tell the webhook' },
        });
        const run = (await started.json()) as RunAccepted;
        const [, traceId] = (await storedTrace(run.run_id)).split('-');
        const delivered = await until(async () => received.find((r) => r.type === 'run.completed'));
        expect(delivered.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
        const span = await until(async () => ofTrace(traceId!).find((s) => s.name === 'webhook run.completed'));
        expect(delivered.traceparent).toBe(`00-${traceId}-${span.spanId}-01`);
        expect(span.attributes).toMatchObject({
          'svc.webhook.event': 'run.completed',
          'http.response.status_code': 204,
        });
        // Asked for, the prompts and the answers are in the model calls' spans.
        const chat = ofTrace(traceId!).find((s) => s.name === 'chat fake-model')!;
        expect(String(chat.attributes['gen_ai.input.messages'])).toContain('tell the webhook');
        expect(JSON.parse(String(chat.attributes['gen_ai.output.messages']))).toEqual([
          { role: 'assistant', parts: [{ type: 'text', content: 'done' }] },
        ]);
      } finally {
        await new Promise<void>((resolve) => hooks.close(() => resolve()));
      }
    },
    SPAWNING_TEST_MS,
  );

  it(
    'exports nothing and stores no trace when no exporter or endpoint is set',
    async () => {
      const before = receiver.spans.length;
      const quiet = await ctx.spawn({ GENERATED_DIR: catalog, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
      servers.push(quiet);
      ctx.model.reply(['quiet']);
      const started = await requestServer(quiet.url, '/agents/summary/runs', {
        method: 'POST',
        json: { message: 'x' },
      });
      const run = (await started.json()) as RunAccepted;
      await requestServer(quiet.url, `/runs/${run.run_id}/wait?timeout_s=30`);
      expect(await storedTrace(run.run_id)).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.spans.slice(before).filter((s) => s.attributes['svc.run.id'] === run.run_id)).toEqual([]);
    },
    SPAWNING_TEST_MS,
  );
});
