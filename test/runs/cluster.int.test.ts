import { beforeAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import type { TestServer } from '../helpers/server';
import { followAccepted, readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Runs belong to the cluster: several server processes on one PostgreSQL, as behind a load balancer without
 * sticky sessions. Server A runs in this process; B and C are processes of their own. A short lease makes a
 * dead process's runs lapse within about two seconds.
 */
const LEASE = { RUN_LEASE_S: '2' };
// Room for the flood test's answers of 5,000 tokens (the runtime stops an answer at LOCAL_LLM_MAX_ANSWER_TOKENS).
const ctx = useIntegrationServer({ server: { ...LEASE, LOCAL_LLM_MAX_ANSWER_TOKENS: '5000' } });

type Server = Pick<TestServer, 'request'>;

/** Every server process this file started, so a test can read what all of them logged. */
const spawned: ServerProcess[] = [];
const spawn = async () => {
  const started = await ctx.spawn(LEASE);
  spawned.push(started);
  return started;
};

const tokens = (n: number, prefix = 't') => Array.from({ length: n }, (_, i) => `${prefix}${i} `);

function run(server: Server, body: Record<string, unknown>, agent = 'summary') {
  return server.request(`/graphs/${agent}/run`, { method: 'POST', json: body });
}

function attach(server: Server, runId: string, lastEventId = 0) {
  return server.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(lastEventId) } });
}

/** The raw text of a stream, frame by frame, for byte-for-byte comparisons. */
async function frames(res: Response): Promise<string[]> {
  const text = await res.text();
  return text.split('\n\n').filter((frame) => frame.startsWith('event:'));
}

function expectContiguous(events: ReceivedEvent[]) {
  const ids = events.map((e) => e.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids).toEqual([...ids].sort((a, b) => a - b));
}

describe('a run followed from any process', () => {
  let b: ServerProcess;
  // Started once, before the tests, so that a slow start under load counts against the hook's time, not a test's.
  beforeAll(async () => {
    b = await spawn();
  });

  it('re-attaches on another process after Last-Event-ID with the same ids and text, live to the end', async () => {
    ctx.model.reply(tokens(40), 15);
    let runId = '';
    const head = await readEvents(await run(ctx.server, { message: 'summarise' }), (e) => {
      if (e.data.type === 'run_start') runId = e.data.run_id;
      return e.data.type === 'token' && e.id >= 8;
    });
    const lastSeen = head.at(-1)!.id;
    const rest = await readEvents(await attach(b, runId, lastSeen));
    expect(rest[0]!.id).toBe(lastSeen + 1);
    expect(rest.at(-1)!.data.type).toBe('run_done');
    const whole = [...head, ...rest];
    expectContiguous(whole);
    expect(whole.map((e) => e.id)).toEqual(whole.map((_, i) => i + 1));

    // What clients saw live is what is stored: the same frames, byte for byte, from either process.
    const fromA = await frames(await attach(ctx.server, runId));
    const fromB = await frames(await attach(b, runId));
    expect(fromB).toEqual(fromA);
    expect(fromA).toHaveLength(whole.length);
    expect(fromA.map((f) => Number(/\nid: (\d+)\n/.exec(f)![1]))).toEqual(whole.map((e) => e.id));
    const text = (events: ReceivedEvent[]) => events.map((e) => (e.data.type === 'token' ? e.data.text : '')).join('');
    expect(text(await readEvents(await attach(b, runId)))).toBe(text(whole));
  });

  it('follows a run executed on another process live, before it ends', async () => {
    ctx.model.reply(tokens(30), 25);
    const started = await run(ctx.server, { message: 'live' });
    let runId = '';
    const onA: ReceivedEvent[] = [];
    const readingA = readEvents(started, (e) => {
      if (e.data.type === 'run_start') runId = e.data.run_id;
      onA.push(e);
    });
    await until(async () => runId || undefined);
    const receivedAt: number[] = [];
    const onB = await readEvents(await attach(b, runId), () => void receivedAt.push(Date.now()));
    await readingA;
    expect(onB.map((e) => e.id)).toEqual(onA.map((e) => e.id));
    // B's client had the first token long before the run ended: it followed live, not a replay at the end.
    const firstToken = onB.findIndex((e) => e.data.type === 'token');
    expect(receivedAt.at(-1)! - receivedAt[firstToken]!).toBeGreaterThan(500);
  });

  it('answers a re-attach after a restart exactly as before it', async () => {
    ctx.model.reply(tokens(12));
    const events = await readEvents(await run(ctx.server, { message: 'before the restart' }));
    const runId = (events[0]!.data as { run_id: string }).run_id;
    const server = await ctx.restart();
    const after = await readEvents(await attach(server, runId, 5));
    expect(after.map((e) => [e.id, e.data])).toEqual(events.slice(5).map((e) => [e.id, e.data]));
  });

  it('stops a gate stream at gate_waiting and resumes it through another process with the same sequence', async () => {
    ctx.model.reply(['looks ', 'fine']);
    const first = await readEvents(await run(ctx.server, { message: 'review this' }, 'review'));
    expect(first.at(-1)!.data.type).toBe('gate_waiting');
    const threadId = (first[0]!.data as { thread_id: string }).thread_id;
    const runId = (first[0]!.data as { run_id: string }).run_id;
    const approved = await followAccepted(
      await b.request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: { reason: 'ok' } }),
      (path) => b.request(path),
    );
    const resumed = await readEvents(approved);
    expect(resumed[0]!.id).toBe(first.at(-1)!.id + 1);
    expect(resumed[0]!.data.type).toBe('gate_approved');
    expect(resumed.at(-1)!.data.type).toBe('run_done');
    // The whole run, from A, is both legs in order.
    const whole = await readEvents(await attach(ctx.server, runId));
    expect(whole.map((e) => e.id)).toEqual([...first, ...resumed].map((e) => e.id));
  });

  it('cancels a run executed on another process', async () => {
    ctx.model.reply(tokens(200), 20);
    let runId = '';
    const reading = readEvents(await run(b, { message: 'long' }), (e) => {
      if (e.data.type === 'run_start') runId = e.data.run_id;
    });
    await until(async () => runId || undefined);
    const cancelled = await ctx.server.request(`/runs/${runId}/cancel`, { method: 'POST', json: {} });
    expect(cancelled.status).toBe(200);
    const events = await reading;
    expect(events.at(-1)!.data.type).toBe('run_cancelled');
  });
});

describe('a run whose process dies', () => {
  it('is taken over from its last checkpoint, and a client that re-attaches sees one stream', async () => {
    const c = await spawn();
    // dispatch, execute, summarize: each node streams 30 tokens; C dies while execute streams.
    ctx.model.reply(tokens(30), 20);
    let runId = '';
    const seen = await readEvents(await run(c, { message: 'survive a crash' }), (e) => {
      if (e.data.type === 'run_start') runId = e.data.run_id;
      return e.data.type === 'token' && e.data.node === 'execute' && e.data.text === 't5 ';
    });
    const callsBefore = ctx.model.requests.length;
    c.child.kill('SIGKILL');
    await c.exited;

    const rest = await readEvents(await attach(ctx.server, runId, seen.at(-1)!.id));
    const resumed = rest[0]!;
    expect(resumed.data).toMatchObject({ type: 'run_resumed', run_id: runId, attempt: 2, node: 'execute' });
    expect(resumed.id).toBeGreaterThan(seen.at(-1)!.id);
    expect(rest.at(-1)!.data.type).toBe('run_done');
    const whole = [...seen, ...rest];
    expectContiguous(whole);
    // execute ran again from its start, then summarize; dispatch did not run again.
    expect(ctx.model.requests.length - callsBefore).toBe(2);
    const rerun = rest.filter((e) => e.data.type === 'token' && e.data.node === 'execute');
    expect(rerun.map((e) => (e.data as { text: string }).text).join('')).toBe(tokens(30).join(''));

    const detail = (await (await ctx.server.request(`/runs/${runId}`)).json()) as {
      status: string;
      nodes: { node_id: string; status: string; output: string }[];
    };
    expect(detail.status).toBe('completed');
    expect(detail.nodes.map((n) => [n.node_id, n.status])).toEqual([
      ['dispatch', 'completed'],
      ['execute', 'completed'],
      ['summarize', 'completed'],
    ]);
    expect(detail.nodes[1]!.output).toBe(tokens(30).join(''));
    // A client that follows from the start sees what was stored: the resumed stream after the cut.
    const replay = await readEvents(await attach(ctx.server, runId));
    expectContiguous(replay);
    expect(replay.filter((e) => e.data.type === 'run_resumed')).toHaveLength(1);
  });

  it('is claimed by exactly one of two processes racing for its lapsed lease', async () => {
    const b = await spawn();
    const c = await spawn();
    ctx.model.reply(tokens(20), 30);
    let runId = '';
    await readEvents(await run(c, { message: 'race' }), (e) => {
      if (e.data.type === 'run_start') runId = e.data.run_id;
      return e.data.type === 'token';
    });
    const callsBefore = ctx.model.requests.length;
    c.child.kill('SIGKILL');
    await c.exited;

    const events = await readEvents(await attach(b, runId));
    expect(events.filter((e) => e.data.type === 'run_resumed')).toHaveLength(1);
    expect(events.at(-1)!.data.type).toBe('run_done');
    // One takeover: the cut-off node and the two after it ran once each, not once per process.
    expect(ctx.model.requests.length - callsBefore).toBe(3);
    // Every live process looked for lapsed leases (this one and all spawned): one took the run over.
    const logs = [ctx.server.logs.join('\n'), ...spawned.map((p) => p.output())].join('\n');
    expect(logs.match(new RegExp(`run ${runId} \\(summary\\) taken over`, 'g'))).toHaveLength(1);
    await b.stop();
  });
});

describe('a Last-Event-ID at or past the end of a live run', () => {
  it('ends with the run, on the executing process and on another', async () => {
    const b = await spawn();
    ctx.model.reply(tokens(30), 30);
    let runId = '';
    let lastSeen = 0;
    let going!: () => void;
    const started = new Promise<void>((resolve) => (going = resolve));
    const own = readEvents(await run(ctx.server, { message: 'summarise' }), (e) => {
      if (e.data.type === 'run_start') runId = e.data.run_id;
      lastSeen = e.id;
      if (e.name === 'token' && e.id > 5) going();
    });
    await started;
    // Claims to have seen everything there will be (or more than an id can hold), or exactly what was sent so far.
    const claims = ['1e308', '99999999999', String(lastSeen)];
    const followers = claims.flatMap((claim) =>
      [ctx.server, b].map(async (server) => {
        const res = await server.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': claim } });
        return readEvents(res);
      }),
    );
    const done = (await own).at(-1)!;
    expect(done.data.type).toBe('run_done');
    const ended = await Promise.all(followers);
    // Every stream ended with the run; none handed out an event at or before the id it was given.
    for (const [index, events] of ended.entries()) {
      const claim = Number(claims[Math.floor(index / 2)]);
      expect(events.every((e) => e.id > Math.min(claim, 2 ** 31 - 1))).toBe(true);
    }
    expect(ended.slice(4).map((events) => events.at(-1)?.data.type)).toEqual(['run_done', 'run_done']);
  });
});
