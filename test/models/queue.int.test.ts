import { describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

const ctx = useIntegrationServer({ server: false });

const start = (server: TestServer, message: string, onEvent?: (e: ReceivedEvent) => boolean | void) =>
  server.request('/graphs/summary/run', { method: 'POST', json: { message } }).then((res) => readEvents(res, onEvent));

const status = async (server: TestServer) => (await server.request('/queue/status')).json();

/** Resolves once the run has streamed its first token (it holds a slot). */
function startHolding(server: TestServer, message: string) {
  let holding!: () => void;
  const started = new Promise<void>((resolve) => (holding = resolve));
  const run = { id: '', started, done: Promise.resolve([] as ReceivedEvent[]) };
  run.done = start(server, message, (e) => {
    if (e.data.type === 'run_start') run.id = e.data.run_id;
    if (e.name === 'token') holding();
  });
  return run;
}

/** Starts runs a and b, the model streaming `tokens` tokens `delayMs` apart; resolves once both hold a slot. */
async function holdBothSlots(server: TestServer, tokens: number, delayMs: number) {
  ctx.model.reply(
    Array.from({ length: tokens }, (_, i) => `${i} `),
    delayMs,
  );
  const a = startHolding(server, 'a');
  const b = startHolding(server, 'b');
  await Promise.all([a.started, b.started]);
  return { a, b };
}

describe('the local-runtime queue with two slots', () => {
  it('queues a third run at position 1, runs it when a slot frees, and /queue/status follows every step', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '2' });
    try {
      const { a, b } = await holdBothSlots(server, 30, 20);
      expect(await status(server)).toMatchObject({ slots: 2, active: 2, waiting: 0 });

      const queued: ReceivedEvent[] = [];
      let sawStatus: unknown;
      const c = start(server, 'c', (e) => {
        if (e.name === 'queue') {
          queued.push(e);
          void status(server).then((s) => (sawStatus ??= s));
        }
      });
      const events = await c;
      expect(queued[0]!.data).toMatchObject({ type: 'queue', node: 'dispatch', position: 1, waiting: 1, active: 2 });
      expect(sawStatus).toMatchObject({ active: 2, waiting: 1 });
      // Queued before its first model call, then it ran normally.
      expect(events.findIndex((e) => e.name === 'queue')).toBeLessThan(events.findIndex((e) => e.name === 'token'));
      expect(events.at(-1)!.data.type).toBe('run_done');
      await Promise.all([a.done, b.done]);
      expect(await status(server)).toMatchObject({ active: 0, waiting: 0, timed_out: 0 });
      expect(ctx.model.maxInFlight).toBeLessThanOrEqual(2);
    } finally {
      await server.close();
    }
  });

  it('fails runs that wait longer than LOCAL_LLM_QUEUE_TIMEOUT_S with the exact TimeoutError text', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '2', LOCAL_LLM_QUEUE_TIMEOUT_S: '1' });
    try {
      const { a, b } = await holdBothSlots(server, 100, 30);
      const [third, fourth] = await Promise.all([start(server, 'third'), start(server, 'fourth')]);
      const details = [third, fourth]
        .map((events) => events.at(-1)!.data)
        .map((d) => (d.type === 'run_error' ? d.error_detail : d.type))
        .sort();
      expect(details).toEqual([
        'TimeoutError: local runtime queue timeout after 1s (0 still waiting, 2 active)',
        'TimeoutError: local runtime queue timeout after 1s (1 still waiting, 2 active)',
      ]);
      expect(await status(server)).toMatchObject({ timed_out: 2, waiting: 0 });
      for (const run of [a, b]) await server.request(`/runs/${run.id}/cancel`, { method: 'POST', json: {} });
      await Promise.all([a.done, b.done]);
    } finally {
      await server.close();
    }
  });

  it('resets counters during active calls without going negative or losing a run', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '2' });
    try {
      const { a, b } = await holdBothSlots(server, 30, 20);
      const c = startHolding(server, 'c');
      await expect.poll(async () => (await status(server)).waiting).toBe(1);

      const reset = await server.request('/queue/reset', {
        method: 'POST',
        json: { reason: 'stale counters in a test' },
      });
      expect(reset.status).toBe(200);
      // The waiting run got a slot at once; the two older calls no longer count.
      expect(await reset.json()).toMatchObject({ active: 1, waiting: 0, served: 0 });
      expect(
        server.logs.some((l) => l.includes('WARNING svc.models queue reset (stale counters in a test (by anonymous))')),
      ).toBe(true);

      const finished = await Promise.all([a.done, b.done, c.done]);
      expect(finished.map((events) => events.at(-1)!.data.type)).toEqual(['run_done', 'run_done', 'run_done']);
      const after = await status(server);
      expect(after.active).toBe(0);
      expect(after.waiting).toBe(0);
      const { rows } = await server.pool.query(
        `SELECT count(*)::int AS n FROM svc_runs WHERE status = 'completed' AND message IN ('a', 'b', 'c')`,
      );
      expect(rows[0].n).toBeGreaterThanOrEqual(3);
    } finally {
      await server.close();
    }
  });
});

describe('cloud calls', () => {
  it('bypass the local queue', async () => {
    const server = await ctx.start({
      LOCAL_LLM_MAX_CONCURRENT: '1',
      CLOUD_B_API_KEY: 'k',
      CLOUD_B_BASE_URL: ctx.model.url,
    });
    try {
      ctx.model.reply(
        Array.from({ length: 20 }, (_, i) => `${i} `),
        20,
      );
      const local = startHolding(server, 'local');
      await local.started;
      const cloud = await readEvents(
        await server.request('/graphs/summary/run', {
          method: 'POST',
          json: { message: 'cloud', model: 'cloud_b:claude-test' },
        }),
      );
      expect(cloud.some((e) => e.name === 'queue')).toBe(false);
      expect(cloud.at(-1)!.data.type).toBe('run_done');
      await local.done;
    } finally {
      await server.close();
    }
  });
});

describe('the local-runtime queue shared by tenants and processes', () => {
  /** A thread of the summary command in a project of its own, to run in as that tenant. */
  async function threadInNewProject(server: TestServer, name: string): Promise<string> {
    const orgs = (await (await server.request('/orgs')).json()) as { id: string }[];
    const team = (await (
      await server.request('/teams', { method: 'POST', json: { name: `${name} team`, parent_id: orgs[0]!.id } })
    ).json()) as { id: string };
    const project = (await (
      await server.request('/projects', { method: 'POST', json: { name, parent_id: team.id } })
    ).json()) as { id: string };
    const thread = (await (
      await server.request('/threads', { method: 'POST', json: { agent: 'summary', project_id: project.id } })
    ).json()) as { id: string };
    return thread.id;
  }

  /** An organisation with `projects` projects under one team, created by the (anonymous) instance admin. */
  async function organisation(server: TestServer, name: string, projects: number): Promise<string[]> {
    const created = async (path: string, json: unknown) =>
      ((await (await server.request(path, { method: 'POST', json })).json()) as { id: string }).id;
    const org = await created('/orgs', { name });
    const team = await created('/teams', { name: `${name} team`, parent_id: org });
    const ids: string[] = [];
    for (let i = 0; i < projects; i++) ids.push(await created('/projects', { name: `${name} ${i}`, parent_id: team }));
    return ids;
  }

  it('serves another organisation next while one tenant floods the queue from ten projects', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '1', LOCAL_LLM_MAX_RUNS_PER_USER: '100' });
    try {
      const flooding = await organisation(server, 'Flood', 10);
      const [other] = await organisation(server, 'Other', 1);
      const run = (message: string, projectId: string, onEvent?: (e: ReceivedEvent) => boolean | void) =>
        server
          .request('/graphs/summary/run', { method: 'POST', json: { message, project_id: projectId } })
          .then((res) => readEvents(res, onEvent));
      // The other organisation has been served before: it is no newcomer that a round robin would put first.
      ctx.model.reply(['a ']);
      expect((await run('earlier', other!)).at(-1)!.data.type).toBe('run_done');

      ctx.model.reply(['a ', 'b '], 40);
      const flood = Array.from({ length: 20 }, (_, i) => run(`flood ${i}`, flooding[i % 10]!));
      await until(async () => ((await status(server)).waiting >= 19 ? true : undefined));
      const positions: number[] = [];
      const events = await run(
        'other',
        other!,
        (e) => void (e.data.type === 'queue' && positions.push(e.data.position)),
      );
      expect(events.at(-1)!.data.type).toBe('run_done');
      // Each organisation has a turn in every round: at most the flood's next call is ahead of it.
      expect(positions[0] ?? 1).toBeLessThanOrEqual(2);
      expect((await status(server)).waiting).toBeGreaterThan(0);
      await Promise.all(flood);
    } finally {
      await server.close();
    }
  });

  it('tells a waiter again how long it waits when the call ahead runs longer than calls did', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '1' });
    try {
      // Calls so far were short: the queue's average call is a fraction of a second (the counters of earlier tests
      // forgotten first).
      await server.request('/queue/reset', { method: 'POST', json: { reason: 'a fresh average' } });
      ctx.model.reply(['quick ']);
      await start(server, 'quick');
      // Six seconds: the estimate is told again at most every two, and a loaded machine may queue the waiter late.
      ctx.model.reply(
        Array.from({ length: 60 }, (_, i) => `${i} `),
        100,
      );
      const holder = startHolding(server, 'long');
      await holder.started;
      const estimates: number[] = [];
      let behind = '';
      let served!: () => void;
      const slot = new Promise<void>((resolve) => (served = resolve));
      const waiting = start(server, 'behind', (e) => {
        if (e.data.type === 'run_start') behind = e.data.run_id;
        if (e.data.type === 'queue') estimates.push(e.data.estimated_wait_s);
        if (e.name === 'token') served();
      });
      await slot;
      for (const runId of [behind, holder.id])
        await server.request(`/runs/${runId}/cancel`, { method: 'POST', json: {} });
      await Promise.all([waiting, holder.done]);
      // The first estimate came from the short calls; as the call ahead ran on, the banner was told a longer wait.
      expect(estimates.length).toBeGreaterThanOrEqual(2);
      expect(Math.max(...estimates.slice(1))).toBeGreaterThan(estimates[0]! + 1);
    } finally {
      await server.close();
    }
  });

  it('serves a quiet project next, not behind every run a busy project queued', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '1', LOCAL_LLM_MAX_RUNS_PER_USER: '100' });
    try {
      const quietThread = await threadInNewProject(server, 'quiet');
      ctx.model.reply(['a ', 'b '], 40);
      const busy = Array.from({ length: 8 }, (_, i) => start(server, `busy ${i}`));
      await until(async () => ((await status(server)).waiting >= 7 ? true : undefined));
      const firstQueue: number[] = [];
      const quiet = await server
        .request('/graphs/summary/run', { method: 'POST', json: { message: 'quiet', thread_id: quietThread } })
        .then((res) => readEvents(res, (e) => void (e.data.type === 'queue' && firstQueue.push(e.data.position))));
      expect(quiet.at(-1)!.data.type).toBe('run_done');
      // Queued (if at all) behind at most the one call of the busy project that was next, not behind all 7.
      expect(Math.max(0, ...firstQueue.slice(0, 1))).toBeLessThanOrEqual(2);
      // The quiet run finished while busy runs were still waiting.
      expect((await status(server)).waiting).toBeGreaterThan(0);
      await Promise.all(busy);
    } finally {
      await server.close();
    }
  });

  it('answers 429 with Retry-After once one user has too many runs on the local runtime', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '1', LOCAL_LLM_MAX_RUNS_PER_USER: '2' });
    try {
      ctx.model.reply(['x '], 300);
      const going = [startHolding(server, 'one'), startHolding(server, 'two')];
      await going[0]!.started;
      const refused = await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'three' } });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too_many_requests');
      await Promise.all(going.map((r) => r.done));
      // Room again once they ended.
      const after = await start(server, 'four');
      expect(after.at(-1)!.data.type).toBe('run_done');
    } finally {
      await server.close();
    }
  });

  it('holds the per-user limit under a burst spread over two processes: exactly the limit starts', async () => {
    const env = { LOCAL_LLM_MAX_CONCURRENT: '1', LOCAL_LLM_MAX_RUNS_PER_USER: '20', LOCAL_LLM_QUEUE_TIMEOUT_S: '120' };
    const [b, c] = [await ctx.spawn(env), await ctx.spawn(env)];
    const accepted: string[] = [];
    try {
      // Every run holds on: the one slot streams slowly, the others wait in the queue, all of them `running`.
      ctx.model.reply(['held '], 60_000);
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 ? b : c).request('/graphs/summary/run', {
            method: 'POST',
            json: { message: `burst ${i}` },
            headers: { accept: 'application/json' },
          }),
        ),
      );
      for (const answer of answers.filter((r) => r.status === 200)) {
        accepted.push(((await answer.json()) as { run_id: string }).run_id);
      }
      expect(accepted).toHaveLength(20);
      const refused = answers.filter((r) => r.status === 429);
      expect(refused).toHaveLength(80);
      for (const answer of refused) expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Refused runs left no thread behind.
      const threads = (await (await b.request('/threads?limit=200')).json()) as {
        items: { last_message: string | null }[];
      };
      expect(threads.items.filter((t) => t.last_message?.startsWith('burst '))).toHaveLength(20);
    } finally {
      for (const runId of accepted) await b.request(`/runs/${runId}/cancel`, { method: 'POST', json: {} });
      await Promise.all([b.stop(), c.stop()]);
    }
  });

  it('counts a model with an unknown cloud_ prefix as the local runtime it runs on', async () => {
    const server = await ctx.start({ LOCAL_LLM_MAX_CONCURRENT: '1', LOCAL_LLM_MAX_RUNS_PER_USER: '2' });
    try {
      ctx.model.reply(['x '], 300);
      const holding = startHolding(server, 'holds the slot');
      await holding.started;
      // `cloud_x:` names no provider: the model is the local runtime's, and its run waits for the slot.
      const queued = await server.request('/graphs/summary/run', {
        method: 'POST',
        json: { message: 'waits', model: 'cloud_x:held' },
        headers: { accept: 'application/json' },
      });
      expect(queued.status).toBe(200);
      const refused = await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'third' } });
      expect(refused.status).toBe(429);
      await holding.done;
      const { run_id } = (await queued.json()) as { run_id: string };
      await server.request(`/runs/${run_id}/cancel`, { method: 'POST', json: {} });
    } finally {
      await server.close();
    }
  });

  it('bounds the calls in flight across processes, and gives back the slot of a process that dies', async () => {
    // A lease long enough that a process busy starting or streaming never looks dead to the other.
    const leaseS = 5;
    const env = { LOCAL_LLM_MAX_CONCURRENT: '1', RUN_LEASE_S: String(leaseS) };
    const [b, c] = [await ctx.spawn(env), await ctx.spawn(env)];
    try {
      ctx.model.reply(
        Array.from({ length: 15 }, (_, i) => `${i} `),
        20,
      );
      const before = ctx.model.maxInFlight;
      ctx.model.maxInFlight = 0;
      const runs = [b, c, b, c].map((server, i) =>
        server.request('/graphs/summary/run', { method: 'POST', json: { message: `p${i}` } }).then(readEvents),
      );
      for (const events of await Promise.all(runs)) expect(events.at(-1)!.data.type).toBe('run_done');
      // The stand-in runtime counts the calls it serves at once: never more than the one slot of the cluster.
      expect(ctx.model.maxInFlight).toBe(1);
      ctx.model.maxInFlight = before;

      // b takes the slot and dies with it; c's run gets it once b's ticket lapses.
      ctx.model.reply(['slow '], 60_000);
      const holding = b.request('/graphs/summary/run', { method: 'POST', json: { message: 'dies' } });
      await until(async () => (ctx.model.inFlight === 1 ? true : undefined));
      b.child.kill('SIGKILL');
      await b.exited;
      ctx.model.reply(['after '], 0);
      const started = Date.now();
      const events = await c
        .request('/graphs/summary/run', { method: 'POST', json: { message: 'next' } })
        .then(readEvents);
      expect(events.at(-1)!.data.type).toBe('run_done');
      // Within the dead process's lease, a grant poll and the run itself.
      expect(Date.now() - started).toBeLessThan((leaseS + 5) * 1000);
      await holding.catch(() => undefined);
    } finally {
      await c.stop();
    }
  }, 90_000);
});
