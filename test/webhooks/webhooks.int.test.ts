import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import type { CreatedWebhook, Delivery, WebhookPayload } from '../../src-server/contracts/webhooks';
import { createPool } from '../../src-server/db/pool';
import { gatedAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestRequestInit } from '../helpers/request';
import { followAccepted, readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Webhooks end to end: real servers (in-process and as processes of their own), a real PostgreSQL whose triggers
 * fill the outbox, and receivers on loopback that check every signature with the Standard Webhooks library.
 */

type Server = { request(path: string, init?: TestRequestInit): Promise<Response> };

/** What a receiver answers a request: a status (and headers), or nothing at all until the test ends. */
type Answer = { status: number; headers?: Record<string, string> } | 'hang';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
  /** The payload as the library verified it; undefined when the signature did not verify. */
  verified: WebhookPayload | undefined;
  error?: string;
}

interface Receiver {
  url: string;
  /** Set once the webhook is registered: the receiver verifies every request with it. */
  secret: string;
  received: Received[];
  /** Requests it holds unanswered now, and the most it held at once: the sender's attempts in flight to it. */
  open: number;
  maxOpen: number;
  close(): Promise<void>;
}

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

/** A local HTTP server that verifies each delivery as a real receiver would, and answers as `answer` says. */
async function startReceiver(answer: (n: number) => Answer = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  const receiver: Receiver = { url: '', secret: '', received, open: 0, maxOpen: 0, close: async () => undefined };
  const server = http.createServer((req, res) => {
    receiver.open += 1;
    receiver.maxOpen = Math.max(receiver.maxOpen, receiver.open);
    res.on('close', () => (receiver.open -= 1));
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const entry: Received = { headers: req.headers, body, at: Date.now(), verified: undefined };
      try {
        entry.verified = new Webhook(receiver.secret).verify(body, req.headers as Record<string, string>) as
          WebhookPayload | undefined;
      } catch (error) {
        entry.error = String(error);
      }
      received.push(entry);
      const reply = answer(received.length);
      if (reply === 'hang') return;
      res.writeHead(reply.status, reply.headers).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/tok_receiver-path-secret`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  receivers.push(receiver);
  return receiver;
}

async function create(server: Server, path: string, json: object): Promise<string> {
  return ((await (await server.request(path, { method: 'POST', json })).json()) as { id: string }).id;
}

/** A new organisation, team and project, made by the instance administrator (authentication is off). */
async function freshProject(server: Server): Promise<{ org: string; team: string; project: string }> {
  const org = await create(server, '/orgs', { name: `webhooks ${randomUUID().slice(0, 8)}` });
  const team = await create(server, '/teams', { name: 'team', parent_id: org });
  return { org, team, project: await create(server, '/projects', { name: 'project', parent_id: team }) };
}

async function register(
  server: Server,
  receiver: Receiver,
  events: string[],
  scope: { project_id: string } | { org_id: string },
): Promise<CreatedWebhook> {
  const res = await server.request('/webhooks', { method: 'POST', json: { url: receiver.url, events, ...scope } });
  expect(res.status).toBe(201);
  const created = (await res.json()) as CreatedWebhook;
  receiver.secret = created.secret;
  return created;
}

async function deliveries(server: Server, webhookId: string): Promise<Delivery[]> {
  const res = await server.request(`/webhooks/${webhookId}/deliveries`);
  expect(res.status).toBe(200);
  return (await res.json()) as Delivery[];
}

/** A run to its end or its gate: the stream read whole, and the run's ids from run_start. */
async function run(server: Server, agent: string, projectId: string, message = 'Review: rename the config loader') {
  const events = await readEvents(
    await server.request(`/graphs/${agent}/run`, { method: 'POST', json: { message, project_id: projectId } }),
  );
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { events, runId: start.run_id, threadId: start.thread_id };
}

const payloads = (receiver: Receiver) => receiver.received.map((r) => r.verified);

/** Receivers on loopback, and short retries: three attempts 0.2 s then 0.4 s apart. */
const DELIVERY_ENV = {
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_BASE_S: '0.2',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_TIMEOUT_S: '2',
};

describe('deliveries', () => {
  const ctx = useIntegrationServer({ server: DELIVERY_ENV });

  it('sends a signed gate.waiting when a run stops at its gate, and run.completed after the approval', async () => {
    const { project } = await freshProject(ctx.server);
    const receiver = await startReceiver();
    const hook = await register(ctx.server, receiver, ['gate.waiting', 'run.completed'], { project_id: project });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    ctx.model.reply(['Looks ', 'fine']);
    const { events, runId, threadId } = await run(ctx.server, 'review', project);
    expect(events.at(-1)!.data.type).toBe('gate_waiting');
    await until(async () => receiver.received[0]);
    const ids = { run_id: runId, thread_id: threadId, project_id: project, agent: 'review', model: 'fake-model' };
    expect(payloads(receiver)).toEqual([
      {
        type: 'gate.waiting',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        data: {
          ...ids,
          gate: 'gate',
          question: 'Publish this review?',
          expires_at: null,
          // The stop, named as every door names it: the run and the event it stopped with, in its first round.
          stop: { kind: 'gate', id: `${runId}:${events.at(-1)!.id}`, round: 1, node: 'gate', tool_call: null },
        },
      },
    ]);

    // A receiver decides with what the payload gave it, as docs/webhooks.md shows.
    const { stop } = (payloads(receiver)[0] as Extract<WebhookPayload, { type: 'gate.waiting' }>).data;
    ctx.model.reply(['Final ', 'answer']);
    const approved = await ctx.server.request(`/stops/${stop!.id}/decision`, {
      method: 'POST',
      json: { decision: 'approve', round: stop!.round, reason: 'ship it' },
    });
    const resumed = await readEvents(await followAccepted(approved, (path) => ctx.server.request(path)));
    expect(resumed.at(-1)!.data.type).toBe('run_done');
    await until(async () => receiver.received[1]);
    expect(payloads(receiver)[1]).toEqual({
      type: 'run.completed',
      timestamp: expect.any(String),
      data: { ...ids, output: 'Final answer', finished_at: expect.any(String) },
    });

    // Every request verified with the secret, and only with it: the library refuses another secret or a changed body.
    const [first] = receiver.received;
    expect(receiver.received.map((r) => r.error)).toEqual([undefined, undefined]);
    expect(first!.headers['content-type']).toBe('application/json');
    expect(first!.headers['webhook-signature']).toMatch(/^v1,/);
    const other = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    expect(() => other.verify(first!.body, first!.headers as Record<string, string>)).toThrow(WebhookVerificationError);
    expect(() =>
      new Webhook(hook.secret).verify(first!.body.replace('fake-model', 'fake-modem'), first!.headers as never),
    ).toThrow(WebhookVerificationError);

    // The API lists both deliveries, under the ids the receiver saw, each delivered at its first attempt. The server
    // records an attempt once the receiver's answer is in, which may be a moment after the receiver counted the body.
    const listed = await until(async () => {
      const all = await deliveries(ctx.server, hook.id);
      return all.every((d) => d.status !== 'pending') ? all : undefined;
    });
    expect(listed.map((d) => [d.event_type, d.status, d.attempts.map((a) => a.http_status)])).toEqual([
      ['run.completed', 'delivered', [200]],
      ['gate.waiting', 'delivered', [200]],
    ]);
    expect(listed.map((d) => d.id).reverse()).toEqual(receiver.received.map((r) => r.headers['webhook-id']));
    expect(listed[1]!.payload).toEqual(payloads(receiver)[0]);
    // The secret, and the URL's path that may carry a token, never reach a log line.
    expect(ctx.server.logs.join('\n')).not.toContain(hook.secret.slice(6));
    expect(ctx.server.logs.join('\n')).not.toContain('tok_receiver-path-secret');
    expect(ctx.server.logs.some((l) => l.includes(`delivery ${listed[1]!.id} (gate.waiting)`))).toBe(true);
  });

  it('tries again with back-off: a receiver that answers 500 twice gets the delivery at the third attempt', async () => {
    const { project } = await freshProject(ctx.server);
    const receiver = await startReceiver((n) => ({ status: n <= 2 ? 500 : 204 }));
    const hook = await register(ctx.server, receiver, ['run.completed'], { project_id: project });
    ctx.model.reply(['summary']);
    const { runId } = await run(ctx.server, 'summary', project, 'summarise');

    const [delivery] = await until(async () => {
      const listed = await deliveries(ctx.server, hook.id);
      return listed[0]?.status === 'delivered' ? listed : undefined;
    });
    expect(delivery!.attempts.map((a) => [a.attempt, a.http_status, a.error])).toEqual([
      [1, 500, null],
      [2, 500, null],
      [3, 204, null],
    ]);
    expect(delivery!.attempts.every((a) => typeof a.duration_ms === 'number' && a.duration_ms >= 0)).toBe(true);
    expect(delivery).toMatchObject({ event_type: 'run.completed', next_attempt_at: null });
    expect(delivery!.payload).toMatchObject({ data: { run_id: runId } });
    // One message: the same webhook-id on each attempt, each freshly signed, spaced 0.2 s then 0.4 s at least.
    expect(receiver.received).toHaveLength(3);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([delivery!.id]));
    expect(receiver.received.every((r) => r.verified?.type === 'run.completed')).toBe(true);
    const [a, b, c] = delivery!.attempts.map((x) => Date.parse(x.attempted_at));
    expect(b! - a!).toBeGreaterThanOrEqual(190);
    expect(c! - b!).toBeGreaterThanOrEqual(390);
  });

  it('does not follow a redirect: a 3xx is a failed attempt, and the target is never called', async () => {
    const landing = await startReceiver();
    const { project } = await freshProject(ctx.server);
    const receiver = await startReceiver(() => ({ status: 302, headers: { location: `${landing.url}/caught` } }));
    const hook = await register(ctx.server, receiver, ['run.completed'], { project_id: project });
    ctx.model.reply(['summary']);
    await run(ctx.server, 'summary', project, 'summarise');

    const [delivery] = await until(async () => {
      const listed = await deliveries(ctx.server, hook.id);
      return listed[0]?.status === 'failed' ? listed : undefined;
    });
    // WEBHOOK_MAX_ATTEMPTS is 3 here: three 302s, then the delivery is given up.
    expect(delivery!.attempts.map((a) => a.http_status)).toEqual([302, 302, 302]);
    for (const attempt of delivery!.attempts) {
      expect(attempt.error).toBe(
        `redirect not followed (to ${landing.url}/caught): answer with 2xx at the registered URL`,
      );
    }
    expect(receiver.received).toHaveLength(3);
    expect(landing.received).toEqual([]);
  });

  it('reports decisions at a gate: gate.decided with the decider, gate.expired with the outcome', async () => {
    const { org, project } = await freshProject(ctx.server);
    const receiver = await startReceiver();
    // Registered on the organisation: its projects' runs are reported too.
    const hook = await register(ctx.server, receiver, ['gate.decided', 'gate.expired'], { org_id: org });
    ctx.model.reply(['fine']);
    const { runId, threadId } = await run(ctx.server, 'review', project);
    expect(receiver.received).toEqual([]);
    // The rows the run engine writes when a person decides and when the clock does (svc_gate_decisions).
    const decide = (columns: Record<string, unknown>) => {
      const all = { run_id: runId, thread_id: threadId, gate: 'gate', wait_seq: 1000, ...columns };
      const names = Object.keys(all);
      return ctx.server.pool.query(
        `INSERT INTO svc_gate_decisions (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
        Object.values(all),
      );
    };
    await decide({
      decision: 'edit',
      decided_by: 'user-1',
      decided_by_name: 'Ada',
      role: 'owner',
      reason: 'tightened',
      edits: JSON.stringify({ analysis: 'shorter' }),
    });
    await decide({ decision: 'expire', decided_by_name: 'expiry', outcome: 'reject' });
    await until(async () => receiver.received[1]);
    const ids = { run_id: runId, thread_id: threadId, project_id: project, agent: 'review', model: 'fake-model' };
    expect(payloads(receiver)).toEqual([
      {
        type: 'gate.decided',
        timestamp: expect.any(String),
        data: {
          ...ids,
          gate: 'gate',
          decision: 'edit',
          decided_by: { id: 'user-1', name: 'Ada' },
          role: 'owner',
          reason: 'tightened',
          response: null,
          route_to: null,
          edited: ['analysis'],
          decided_at: expect.any(String),
          // The round after the edit, as the next approver names it.
          stop: { kind: 'gate', id: `${runId}:1000`, round: 1, node: 'gate', tool_call: null },
        },
      },
      {
        type: 'gate.expired',
        timestamp: expect.any(String),
        data: {
          ...ids,
          gate: 'gate',
          outcome: 'reject',
          route_to: null,
          decided_at: expect.any(String),
          stop: { kind: 'gate', id: `${runId}:1000`, round: 1, node: 'gate', tool_call: null },
        },
      },
    ]);
    // The receiver sees a request before the sender has read its answer and marked the delivery.
    const settled = await until(async () => {
      const listed = await deliveries(ctx.server, hook.id);
      return listed.every((d) => d.status !== 'pending') ? listed : undefined;
    });
    expect(settled.map((d) => d.status)).toEqual(['delivered', 'delivered']);
  });

  it("reports the run engine's own records: gate.decided at an approval, gate.expired when nobody decides", async () => {
    // The review agent with a gate that expires after a second, rejecting; expiries are looked for every 0.5 s.
    const generatedDir = await writeFixtureCatalog([
      gatedAgent('lapsing-review', { expiry: { after_s: 1, action: 'reject', target: null } }),
    ]);
    const server = await ctx.start({ ...DELIVERY_ENV, GENERATED_DIR: generatedDir, RUN_LEASE_S: '2' });
    try {
      const { org, project } = await freshProject(server);
      const receiver = await startReceiver();
      await register(server, receiver, ['gate.waiting', 'gate.decided', 'gate.expired'], { org_id: org });

      ctx.model.reply(['fine']);
      const approved = await run(server, 'review', project);
      await until(async () => receiver.received[0]);
      ctx.model.reply(['done']);
      const accepted = await server.request(`/threads/${approved.threadId}/gates/gate/approve`, {
        method: 'POST',
        json: { reason: 'ship it' },
      });
      await readEvents(await followAccepted(accepted, (path) => server.request(path)));
      await until(async () => receiver.received[1]);
      expect(payloads(receiver)[1]).toMatchObject({
        type: 'gate.decided',
        data: {
          run_id: approved.runId,
          project_id: project,
          gate: 'gate',
          decision: 'approve',
          decided_by: { name: 'anonymous' },
          reason: 'ship it',
          edited: [],
        },
      });

      ctx.model.reply(['fine']);
      const lapsed = await run(server, 'lapsing-review', project);
      await until(async () => receiver.received[3], 15_000);
      const [waiting, expired] = payloads(receiver).slice(2);
      expect(waiting).toMatchObject({ type: 'gate.waiting', data: { run_id: lapsed.runId, agent: 'lapsing-review' } });
      const { expires_at } = (waiting as Extract<WebhookPayload, { type: 'gate.waiting' }>).data;
      expect(Date.parse(expires_at!)).toBeGreaterThan(Date.parse(waiting!.timestamp));
      expect(expired).toEqual({
        type: 'gate.expired',
        timestamp: expect.any(String),
        data: {
          run_id: lapsed.runId,
          thread_id: lapsed.threadId,
          project_id: project,
          agent: 'lapsing-review',
          model: 'fake-model',
          gate: 'gate',
          outcome: 'reject',
          route_to: null,
          decided_at: expect.any(String),
          // The stop that waited, by the id its gate.waiting gave.
          stop: { ...(waiting as Extract<WebhookPayload, { type: 'gate.waiting' }>).data.stop, round: 1 },
        },
      });
      expect((waiting as Extract<WebhookPayload, { type: 'gate.waiting' }>).data.stop!.id).toMatch(
        new RegExp(`^${lapsed.runId}:\\d+$`),
      );
      expect(receiver.received.every((r) => r.error === undefined)).toBe(true);
    } finally {
      await server.close();
      await fs.rm(generatedDir, { recursive: true, force: true });
    }
  });

  it('lists webhooks without their secrets, and removes one with its deliveries', async () => {
    const { org, project } = await freshProject(ctx.server);
    const receiver = await startReceiver();
    const hook = await register(ctx.server, receiver, ['run.failed', 'gate.waiting'], { project_id: project });
    // Kept in the order of the event list, whatever the order given.
    expect(hook.events).toEqual(['gate.waiting', 'run.failed']);
    const listed = await ctx.server.request(`/webhooks?project_id=${project}`);
    expect(await listed.json()).toEqual([
      {
        id: hook.id,
        url: receiver.url,
        events: ['gate.waiting', 'run.failed'],
        project_id: project,
        org_id: null,
        created_at: expect.any(String),
      },
    ]);
    // The organisation's list holds the organisation's own webhooks, not its projects'.
    expect(await (await ctx.server.request(`/webhooks?org_id=${org}`)).json()).toEqual([]);
    for (const query of ['', `?project_id=${project}&org_id=${org}`]) {
      const res = await ctx.server.request(`/webhooks${query}`);
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toBe(
        'invalid query parameters: project_id: give either project_id or org_id',
      );
    }
    const twice = await ctx.server.request('/webhooks', {
      method: 'POST',
      json: { url: receiver.url, events: ['run.failed', 'run.failed'], project_id: project },
    });
    expect(twice.status).toBe(400);
    expect((await twice.json()).error.message).toBe('invalid request body: events: name each event once');

    expect((await ctx.server.request(`/webhooks/${hook.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await (await ctx.server.request(`/webhooks?project_id=${project}`)).json()).toEqual([]);
    const gone = await ctx.server.request(`/webhooks/${hook.id}/deliveries`);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({ error: { code: 'not_found', message: `webhook ${hook.id} not found` } });
  });

  it('refuses a webhook beyond WEBHOOK_MAX_PER_SCOPE (20) on one project or organisation with 409', async () => {
    const { org, project } = await freshProject(ctx.server);
    const receiver = await startReceiver();
    const registerOn = (scope: { project_id: string } | { org_id: string }) =>
      ctx.server.request('/webhooks', {
        method: 'POST',
        json: { url: receiver.url, events: ['run.failed'], ...scope },
      });
    // All at once: concurrent registrations cannot slip past the limit between counting and inserting.
    const answers = await Promise.all(Array.from({ length: 25 }, () => registerOn({ project_id: project })));
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses).toEqual([...Array<number>(20).fill(201), ...Array<number>(5).fill(409)]);
    const refused = answers.find((res) => res.status === 409)!;
    expect(await refused.json()).toEqual({
      error: {
        code: 'conflict',
        message:
          `project ${project} already has 20 webhooks, the most one project or organisation may have ` +
          '(WEBHOOK_MAX_PER_SCOPE): delete one to register another',
      },
    });
    const listed = (await (await ctx.server.request(`/webhooks?project_id=${project}`)).json()) as { id: string }[];
    expect(listed).toHaveLength(20);

    // The organisation's own webhooks are counted apart from its projects'.
    expect((await registerOn({ org_id: org })).status).toBe(201);
    // A place freed is a place to register again.
    expect((await ctx.server.request(`/webhooks/${listed[0]!.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await registerOn({ project_id: project })).status).toBe(201);
    expect((await registerOn({ project_id: project })).status).toBe(409);
  });

  it('is shown on the portal page, with a curl example beside the others', async () => {
    const portal = await (await ctx.server.request('/')).text();
    expect(portal).toContain('<pre data-example="webhook">curl -X POST "$BASE/webhooks"');
    expect(portal).toContain('"events": ["gate.waiting", "run.completed"]');
  });
});

describe("addresses on the server's own network", () => {
  // The defaults: private addresses refused. One attempt per delivery, so a refused delivery ends at once.
  const ctx = useIntegrationServer({ server: { WEBHOOK_MAX_ATTEMPTS: '1' } });

  it('refuses a loopback or private URL with 400, unless WEBHOOK_ALLOW_PRIVATE_URLS allows it', async () => {
    const { project } = await freshProject(ctx.server);
    const receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    for (const url of [
      receiver.url,
      `http://localhost:${port}/hook`,
      `http://[::1]:${port}/hook`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.8/hook',
    ]) {
      const res = await ctx.server.request('/webhooks', {
        method: 'POST',
        json: { url, events: ['run.completed'], project_id: project },
      });
      expect(res.status, url).toBe(400);
      const { error } = await res.json();
      expect(error.code).toBe('invalid_request');
      expect(error.message, url).toMatch(
        /^invalid request body: url: .+ is on the server's own network \(loopback, link-local or private address\), where webhooks are not sent: set WEBHOOK_ALLOW_PRIVATE_URLS=true to allow it$/,
      );
    }
    expect(await (await ctx.server.request(`/webhooks?project_id=${project}`)).json()).toEqual([]);

    const allowing = await ctx.start({ WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
    try {
      const res = await allowing.request('/webhooks', {
        method: 'POST',
        json: { url: receiver.url, events: ['run.completed'], project_id: project },
      });
      expect(res.status).toBe(201);
    } finally {
      await allowing.close();
    }
  });

  it('checks the address again when it sends: a name that resolves to loopback then is not called', async () => {
    const { project } = await freshProject(ctx.server);
    const receiver = await startReceiver();
    // As if DNS had changed since the registration (rebinding): the webhook's name now resolves to loopback.
    const id = randomUUID();
    await ctx.server.pool.query(
      `INSERT INTO svc_webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, '{run.completed}', $4)`,
      [id, project, receiver.url.replace('127.0.0.1', 'localhost'), `whsec_${Buffer.alloc(32, 1).toString('base64')}`],
    );
    ctx.model.reply(['summary']);
    await run(ctx.server, 'summary', project, 'summarise');
    const [delivery] = await until(async () => {
      const listed = await deliveries(ctx.server, id);
      return listed[0]?.status === 'failed' ? listed : undefined;
    });
    expect(delivery!.attempts).toEqual([
      {
        attempt: 1,
        attempted_at: expect.any(String),
        duration_ms: expect.any(Number),
        http_status: null,
        error:
          "localhost resolves to an address on the server's own network (loopback, link-local or private): not sent " +
          '(WEBHOOK_ALLOW_PRIVATE_URLS=true allows it)',
      },
    ]);
    expect(receiver.received).toEqual([]);
  });
});

describe('fairness between tenants', () => {
  // The defaults, but for receivers on loopback: an attempt to a receiver that never answers lasts 10 s.
  const env = { WEBHOOK_ALLOW_PRIVATE_URLS: 'true' };
  const ctx = useIntegrationServer({ server: env });

  const hanging: CreatedWebhook[] = [];
  // Removed with their deliveries, so that no attempt of one test waits on in the next.
  afterEach(async () => {
    for (const hook of hanging.splice(0)) await ctx.server.request(`/webhooks/${hook.id}`, { method: 'DELETE' });
  });

  /** `count` webhooks on a scope, all to one receiver that never answers. */
  async function hangingWebhooks(
    receiver: Receiver,
    count: number,
    scope: { project_id: string } | { org_id: string },
  ) {
    for (let i = 0; i < count; i++) hanging.push(await register(ctx.server, receiver, ['gate.waiting'], scope));
  }

  /** Runs of the gated agent: each stops at its gate, which queues one gate.waiting per webhook that wants it. */
  async function gates(server: Server, project: string, runs: number) {
    for (let i = 0; i < runs; i++) {
      ctx.model.reply(['fine']);
      await run(server, 'review', project);
    }
  }

  /** A receiver with one webhook for gate.waiting on `project`, and a run that reaches its gate there. */
  async function watchedGate(server: Server, project: string): Promise<Receiver> {
    const receiver = await startReceiver();
    await register(server, receiver, ['gate.waiting'], { project_id: project });
    await gates(server, project, 1);
    return receiver;
  }

  /**
   * How long after its gate was reached (the payload's timestamp) the receiver had the delivery; Infinity when it
   * had none within 5 s.
   */
  async function delayMs(receiver: Receiver): Promise<number> {
    const first = await until(async () => receiver.received[0], 5000).catch(() => undefined);
    return first ? first.at - Date.parse(first.verified!.timestamp) : Infinity;
  }

  it("sends another organisation's gate.waiting, and another project's, within 2 s while 80 of one project hang", async () => {
    const slow = await freshProject(ctx.server);
    const receiver = await startReceiver(() => 'hang');
    // The most webhooks one project may have, each told of four gates: 80 deliveries to a receiver that never answers.
    await hangingWebhooks(receiver, 20, { project_id: slow.project });
    await gates(ctx.server, slow.project, 4);
    await until(async () => (receiver.open > 0 ? true : undefined));

    const other = await freshProject(ctx.server);
    const otherOrg = await watchedGate(ctx.server, other.project);
    const sibling = await create(ctx.server, '/projects', { name: 'sibling', parent_id: slow.team });
    const sameOrg = await watchedGate(ctx.server, sibling);
    expect(await delayMs(otherOrg)).toBeLessThan(2000);
    expect(await delayMs(sameOrg)).toBeLessThan(2000);
    // The slow project never held more than WEBHOOK_PROJECT_CONCURRENCY attempts at once; the rest wait.
    expect(receiver.maxOpen).toBe(2);
  });

  it('holds one organisation to WEBHOOK_ORG_CONCURRENCY attempts at once across the cluster', async () => {
    const slow = await freshProject(ctx.server);
    const receiver = await startReceiver(() => 'hang');
    // Two scopes of one organisation, 40 deliveries each: the organisation's limit binds before either project's.
    await hangingWebhooks(receiver, 10, { org_id: slow.org });
    await hangingWebhooks(receiver, 10, { project_id: slow.project });
    await gates(ctx.server, slow.project, 4);
    await until(async () => (receiver.open >= 4 ? true : undefined));

    // A second process reads the same outbox: the organisation's limit is the cluster's, not one process's.
    const second = await ctx.start(env);
    try {
      const other = await freshProject(second);
      expect(await delayMs(await watchedGate(second, other.project))).toBeLessThan(2000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.maxOpen).toBe(4);
      expect(receiver.open).toBe(4);
    } finally {
      await second.close();
    }
  });
});

describe('a server killed right after a gate was reached', () => {
  const ctx = useIntegrationServer({ server: false });
  const env = { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_TIMEOUT_S: '3', WEBHOOK_RETRY_BASE_S: '0.2' };

  it('delivers gate.waiting after its restart, with the same webhook-id', async () => {
    const first = await ctx.spawn(env);
    const { project } = await freshProject(first);
    // The first request is left unanswered: the process dies while the delivery is on the wire.
    const receiver = await startReceiver((n) => (n === 1 ? 'hang' : { status: 200 }));
    const hook = await register(first, receiver, ['gate.waiting'], { project_id: project });
    ctx.model.reply(['fine']);
    const { runId } = await run(first, 'review', project);
    await until(async () => receiver.received[0]);
    first.child.kill('SIGKILL');
    await first.exited;

    // The delivery was committed with the gate: its row is there, claimed by the process that died.
    const pool = createPool(ctx.db.url, 1);
    try {
      const { rows } = await pool.query(`SELECT status, attempts FROM svc_webhook_deliveries WHERE webhook_id = $1`, [
        hook.id,
      ]);
      expect(rows).toEqual([{ status: 'pending', attempts: 1 }]);
    } finally {
      await pool.end();
    }

    const second = await ctx.spawn(env);
    // Once the dead process's claim lapses (the time limit and 5 s), the new process sends it again.
    await until(async () => receiver.received[1], 30_000);
    const [cut, sent] = receiver.received;
    expect(sent!.verified).toMatchObject({ type: 'gate.waiting', data: { run_id: runId, gate: 'gate' } });
    expect(cut!.verified).toEqual(sent!.verified);
    expect(sent!.headers['webhook-id']).toBe(cut!.headers['webhook-id']);

    const [delivery] = await until(async () => {
      const listed = await deliveries(second, hook.id);
      return listed[0]?.status === 'delivered' ? listed : undefined;
    });
    expect(delivery!.attempts.map((a) => [a.attempt, a.http_status, a.error])).toEqual([
      [1, null, 'no answer recorded: the server process sending it stopped'],
      [2, 200, null],
    ]);
    expect(`${first.output()}${second.output()}`).not.toContain(hook.secret.slice(6));
    await second.stop();
  }, 90_000);
});

describe('a server with nothing to deliver', () => {
  const ctx = useIntegrationServer({ server: false });

  it('reads the outbox every few seconds, not many times a second', async () => {
    const server = await ctx.spawn({});
    const pool = createPool(ctx.db.url, 1);
    // Reads of the outbox's table by every statement that looks at it (PostgreSQL's own counters).
    const reads = async () => {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT (seq_scan + COALESCE(idx_scan, 0))::integer AS n FROM pg_stat_user_tables
          WHERE relname = 'svc_webhook_deliveries'`,
      );
      return rows[0]!.n;
    };
    try {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const before = await reads();
      await new Promise((resolve) => setTimeout(resolve, 4000));
      // A look every 5 s touches the table a few times; it read it about 40 times a second when an empty outbox
      // counted as due now.
      expect((await reads()) - before).toBeLessThan(20);
    } finally {
      await pool.end();
      await server.stop();
    }
  });
});
