import { MemorySaver } from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Harness, reviewAgent, ScriptedModel, shape, StoreAwayError } from './test-harness';

let harness: Harness;
afterEach(async () => {
  await harness?.close();
});

const approve = (runId: string, waitSeq: number, name = 'Ann', extra = {}) => ({
  runId,
  gate: 'gate',
  waitSeq,
  round: null,
  decision: {
    kind: 'approve' as const,
    by: { id: name.toLowerCase(), name },
    role: 'member' as const,
    reason: null,
    edits: null,
    response: null,
    routeTo: null,
    toolCall: null,
    ...extra,
  },
  approvalsNeeded: 1,
});

describe('a run executed by the engine', () => {
  it('streams its phases to the gate, pauses there, and keeps its rows and events', async () => {
    harness = new Harness();
    const engine = harness.engine();
    harness.model.tokens = ['Looks ', 'fine.'];
    const { run, outcome } = harness.start(engine);
    expect(await outcome).toEqual({ outcome: 'started' });
    const events = await harness.read(engine, run.id);
    expect(shape(events)).toEqual([
      'run_start',
      'node_enter:intake',
      'token:intake',
      'node_exit:intake',
      'node_enter:analysis',
      'token:analysis',
      'node_exit:analysis',
      'node_enter:gate',
      'gate_waiting:gate',
    ]);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)!.event).toMatchObject({ context: { analysis: 'Looks fine.' }, approvals_needed: 1 });
    expect(harness.stores.row(run.id)).toMatchObject({ status: 'waiting_approval', eventSeq: events.length });
    expect(harness.stores.storedEvents(run.id).map((e) => e.seq)).toEqual(events.map((e) => e.id));
    expect(harness.stores.nodeRows(run.id).map((n) => `${n.key}:${n.status}`)).toEqual([
      'intake#1:completed',
      'analysis#1:completed',
      'gate#1:waiting_approval',
    ]);
  });

  it('resumes the gate it paused at with an approval, and completes', async () => {
    harness = new Harness();
    const engine = harness.engine();
    const { run } = harness.start(engine);
    const head = await harness.read(engine, run.id);
    harness.model.tokens = ['Published.'];
    expect(await engine.decide(approve(run.id, head.at(-1)!.id))).toMatchObject({ outcome: 'resumed' });
    const rest = await harness.read(engine, run.id, head.at(-1)!.id);
    expect(shape(rest)).toEqual([
      'gate_approved:gate',
      'node_enter:output',
      'token:output',
      'node_exit:output',
      'run_done',
    ]);
    expect(rest.at(-1)!.event).toEqual({ type: 'run_done', run_id: run.id, output: 'Published.' });
    expect(harness.stores.row(run.id)).toMatchObject({ status: 'completed' });
    expect(harness.stores.nodeRows(run.id).map((n) => `${n.key}:${n.status}`)).toContain('gate#1:approved');
  });

  it('starts a new thread’s first run without reading a checkpoint, and the thread’s next run goes on from it', async () => {
    harness = new Harness();
    const engine = harness.engine();
    const reads = vi.spyOn(MemorySaver.prototype, 'getTuple');
    const { run: first } = harness.start(engine, 'first question');
    const head = await harness.read(engine, first.id);
    // Only the read that records where the run waits at its gate: none before its first phase.
    expect(reads).toHaveBeenCalledTimes(1);
    harness.model.tokens = ['First answer.'];
    await engine.decide(approve(first.id, head.at(-1)!.id));
    await harness.read(engine, first.id, head.at(-1)!.id);

    reads.mockClear();
    harness.model.calls.length = 0;
    const { run: next } = harness.start(engine, 'second question', { threadId: first.threadId, newThread: null });
    await harness.read(engine, next.id);
    const nextReads = reads.mock.calls.length;
    reads.mockRestore();
    // The thread's latest checkpoint is read as the next run begins, and its first phase sees the first exchange.
    expect(nextReads).toBeGreaterThanOrEqual(2);
    expect(harness.model.calls[0]!.messages.map((m) => m.content)).toEqual(
      expect.arrayContaining(['first question', 'First answer.']),
    );
  });

  it('ends with run_rejected on a rejection, without running the phases after the gate', async () => {
    harness = new Harness();
    const engine = harness.engine();
    const { run } = harness.start(engine);
    const head = await harness.read(engine, run.id);
    const calls = harness.model.calls.length;
    await engine.decide(approve(run.id, head.at(-1)!.id, 'Bob', { kind: 'reject', reason: 'not yet' }));
    const rest = await harness.read(engine, run.id, head.at(-1)!.id);
    expect(shape(rest)).toEqual(['gate_rejected:gate', 'run_rejected']);
    expect(rest.at(-1)!.event).toEqual({ type: 'run_rejected', run_id: run.id, reason: 'not yet' });
    expect(harness.model.calls.length).toBe(calls);
    expect(harness.stores.row(run.id)).toMatchObject({ status: 'rejected', endReason: 'not yet' });
  });

  it('counts approvals to the gate’s number, and answers a stale or repeated decision for what it is', async () => {
    harness = new Harness([reviewAgent('review', { approvals: 2 })]);
    const engine = harness.engine();
    const { run } = harness.start(engine);
    const gateId = (await harness.read(engine, run.id)).at(-1)!.id;
    const first = await engine.decide({ ...approve(run.id, gateId), approvalsNeeded: 2 });
    expect(first).toMatchObject({ outcome: 'waiting', approvals: { needed: 2, given: 1 } });
    expect(await engine.decide({ ...approve(run.id, gateId), approvalsNeeded: 2 })).toEqual({ outcome: 'duplicate' });
    expect(await engine.decide({ ...approve(run.id, gateId - 1, 'Bob'), approvalsNeeded: 2 })).toEqual({
      outcome: 'stale',
    });
    expect(await engine.decide({ ...approve(run.id, gateId, 'Bob'), approvalsNeeded: 2 })).toMatchObject({
      outcome: 'resumed',
    });
    const rest = await harness.read(engine, run.id, gateId);
    expect(rest[0]!.event).toMatchObject({ type: 'gate_approved', deciders: ['Ann', 'Bob'] });
  });

  it('sends the run back on a respond: the phase before the gate runs again with the feedback', async () => {
    harness = new Harness();
    const engine = harness.engine();
    const { run } = harness.start(engine);
    const gateId = (await harness.read(engine, run.id)).at(-1)!.id;
    await engine.decide(
      approve(run.id, gateId, 'Ann', { kind: 'respond', response: 'Mention the tests.', routeTo: 'analysis' }),
    );
    const rest = await harness.read(engine, run.id, gateId);
    expect(shape(rest)).toEqual([
      'gate_responded:gate',
      'node_enter:analysis',
      'token:analysis',
      'node_exit:analysis',
      'node_enter:gate',
      'gate_waiting:gate',
    ]);
    expect(harness.model.prompts().at(-1)).toContain('Mention the tests.');
    expect(harness.stores.nodeRows(run.id).map((n) => n.key)).toEqual([
      'intake#1',
      'analysis#1',
      'gate#1',
      'analysis#2',
      'gate#2',
    ]);
  });

  it('cancels a running run: its model call is aborted, its nodes closed, its stream ends with run_cancelled', async () => {
    harness = new Harness();
    const engine = harness.engine();
    harness.model.tokens = Array.from({ length: 200 }, (_, i) => `${i} `);
    harness.model.delayMs = 5;
    const { run } = harness.start(engine);
    const reading = harness.read(engine, run.id);
    await harness.until(() => harness.stores.nodeRows(run.id).length > 0, 'the first phase');
    expect(await engine.cancel(run.id, 'enough')).toBe(true);
    const events = await reading;
    expect(events.at(-1)!.event).toEqual({ type: 'run_cancelled', run_id: run.id, reason: 'enough' });
    expect(events.filter((e) => e.event.type === 'run_cancelled')).toHaveLength(1);
    await harness.until(() => harness.stores.nodeRows(run.id).every((n) => n.exitedAt !== null), 'closed nodes');
    expect(harness.stores.nodeRows(run.id).map((n) => n.status)).toEqual(['cancelled']);
    expect(await engine.cancel(run.id, 'twice')).toBe(false);
  });

  it('cancels a run waiting at its gate: cancelled, the gate node closed, its stream ends there', async () => {
    harness = new Harness();
    const engine = harness.engine();
    const { run } = harness.start(engine);
    const gateId = (await harness.read(engine, run.id)).at(-1)!.id;
    expect(await engine.cancel(run.id, 'not needed')).toBe(true);
    expect(harness.stores.row(run.id)).toMatchObject({ status: 'cancelled', endReason: 'not needed' });
    expect(harness.stores.nodeRows(run.id).find((n) => n.node === 'gate')).toMatchObject({ status: 'cancelled' });
    expect((await harness.read(engine, run.id, gateId)).map((e) => e.event.type)).toEqual(['run_cancelled']);
    expect(await engine.decide(approve(run.id, gateId))).toEqual({ outcome: 'stale' });
  });

  it('fails a run whose model fails, with the exception class and message, and closes its nodes as error', async () => {
    harness = new Harness();
    const engine = harness.engine();
    harness.model.failNext = new TypeError('the model broke');
    const { run } = harness.start(engine);
    const events = await harness.read(engine, run.id);
    expect(events.at(-1)!.event).toEqual({
      type: 'run_error',
      run_id: run.id,
      error_detail: 'TypeError: the model broke',
    });
    expect(harness.stores.row(run.id)).toMatchObject({ status: 'error' });
    expect(harness.stores.nodeRows(run.id).map((n) => n.status)).toEqual(['error']);
  });

  it('reserves a slot as each leg begins, and lets go of what was kept before each stop is announced: at the gate, at its end, on a failure', async () => {
    harness = new Harness();
    // Whether the run's stop had been stored when the engine reserved or let go: it must not have been yet.
    const calls: string[] = [];
    const stops = ['gate_waiting', 'run_done', 'run_error'];
    const stopsStored = (runId: string) =>
      harness.stores.storedEvents(runId).filter((e) => stops.includes(e.type)).length;
    const engine = harness.engine({
      slots: {
        reserve: (run) => void calls.push(`reserve after ${stopsStored(run.id)} stops`),
        letGo: async (runId) => void calls.push(`let go after ${stopsStored(runId)} stops`),
      },
    });
    const { run } = harness.start(engine);
    const head = await harness.read(engine, run.id);
    expect(calls).toEqual(['reserve after 0 stops', 'let go after 0 stops']);
    harness.model.tokens = ['Published.'];
    await engine.decide(approve(run.id, head.at(-1)!.id));
    expect(shape(await harness.read(engine, run.id, head.at(-1)!.id)).at(-1)).toBe('run_done');
    expect(calls.slice(2)).toEqual(['reserve after 1 stops', 'let go after 1 stops']);

    calls.length = 0;
    harness.model.failNext = new TypeError('the model broke');
    const failed = harness.start(engine).run;
    expect((await harness.read(engine, failed.id)).at(-1)!.event.type).toBe('run_error');
    expect(calls).toEqual(['reserve after 0 stops', 'let go after 0 stops']);
  });

  it('aborts a run past its time limit with the documented TimeoutError', async () => {
    harness = new Harness();
    const engine = harness.engine({ runTimeoutS: 0.05 });
    harness.model.tokens = Array.from({ length: 100 }, () => 'x');
    harness.model.delayMs = 5;
    const { run } = harness.start(engine);
    const events = await harness.read(engine, run.id);
    expect(events.at(-1)!.event).toEqual({
      type: 'run_error',
      run_id: run.id,
      error_detail: 'TimeoutError: run exceeded 0.05s',
    });
  });

  it('waits for the database when a write fails for a moment, and goes on', async () => {
    harness = new Harness();
    const engine = harness.engine();
    harness.model.tokens = ['a', 'b', 'c'];
    harness.model.delayMs = 5;
    const { run } = harness.start(engine);
    await harness.until(() => harness.stores.nodeRows(run.id).length > 0, 'the first node row');
    harness.stores.failNextWrite = new StoreAwayError('the database restarted');
    const events = await harness.read(engine, run.id);
    expect(harness.stores.failNextWrite).toBeUndefined();
    expect(events.at(-1)!.event.type).toBe('gate_waiting');
    expect(harness.stores.row(run.id)).toMatchObject({ status: 'waiting_approval' });
  });

  it('waits for the database when reading the phases’ configuration fails for a moment (a leg that begins during a restart)', async () => {
    harness = new Harness();
    let reads = 0;
    const engine = harness.engine({
      nodeConfigs: async () => {
        if (++reads === 1) throw new StoreAwayError('the database is shutting down');
        return new Map();
      },
    });
    harness.model.tokens = ['a'];
    const { run } = harness.start(engine);
    const events = await harness.read(engine, run.id);
    expect(reads).toBe(2);
    expect(events.some((e) => e.event.type === 'run_error')).toBe(false);
    expect(events.at(-1)!.event.type).toBe('gate_waiting');
  });

  it('outlasts a database away for longer than it waits: its readers hear run_error, and the run goes on once it is back', async () => {
    harness = new Harness();
    const engine = harness.engine({ databaseWaitS: 0.1, leaseS: 0.2 });
    harness.model.tokens = ['a', 'b', 'c'];
    harness.model.delayMs = 5;
    const { run } = harness.start(engine);
    await harness.until(() => harness.stores.nodeRows(run.id).length > 0, 'the first node row');
    harness.stores.away = new StoreAwayError('the database is restarting');
    const first = await harness.read(engine, run.id);
    expect(first.at(-1)!.event).toEqual({
      type: 'run_error',
      run_id: run.id,
      error_detail: expect.stringMatching(/could not be stored|StoreAwayError: the database is restarting/),
    });
    // Nothing could be recorded: the run is not given up as an error, it is still this process's to execute.
    expect(harness.stores.row(run.id)).toMatchObject({ status: 'running' });
    harness.stores.away = undefined;
    engine.supervise();
    await harness.until(() => harness.stores.row(run.id)?.status === 'waiting_approval', 'the run to reach its gate');
    const replay = await harness.read(engine, run.id);
    expect(replay.some((e) => e.event.type === 'run_error')).toBe(false);
    expect(replay.at(-1)!.event.type).toBe('gate_waiting');
  });

  it('holds a run past the number it executes at once, saying it waits for the server, then runs it', async () => {
    harness = new Harness();
    const engine = harness.engine({ maxActive: 1 });
    harness.model.tokens = ['a', 'b', 'c'];
    harness.model.delayMs = 10;
    const first = harness.start(engine, 'first');
    const second = harness.start(engine, 'second');
    const [a, b] = await Promise.all([harness.read(engine, first.run.id), harness.read(engine, second.run.id)]);
    expect(a.some((e) => e.event.type === 'server_queue')).toBe(false);
    expect(b.find((e) => e.event.type === 'server_queue')?.event).toEqual({
      type: 'server_queue',
      position: 1,
      running: 1,
    });
    expect(shape(b).slice(0, 3)).toEqual(['run_start', 'server_queue', 'node_enter:intake']);
    expect(b.at(-1)!.event.type).toBe('gate_waiting');
  });
});

describe('a run across processes', () => {
  it('is taken over from its last checkpoint when its process dies, and its stream goes on with run_resumed', async () => {
    harness = new Harness();
    // Process a executes the run and hangs in its second phase; it renews no lease (it is as good as dead).
    const dead = new ScriptedModel();
    dead.hangs = (call) => call.label.endsWith('analysis');
    const a = harness.engine({ models: dead, leaseS: 0.05 });
    const { run } = harness.start(a);
    await harness.until(() => dead.calls.length === 2, 'analysis to start');
    // b's own lease is long: on a loaded machine a lease of 50 ms may lapse under b too, and b take its run over again.
    const b = harness.engine({ leaseS: 2 });
    b.supervise();
    const events = await harness.read(b, run.id);
    const resumed = events.find((e) => e.event.type === 'run_resumed')!;
    expect(resumed.event).toEqual({ type: 'run_resumed', run_id: run.id, attempt: 2, node: 'analysis' });
    expect(events.at(-1)!.event.type).toBe('gate_waiting');
    // Intake ran once (on a); analysis ran again on b from the checkpoint after intake.
    expect(dead.calls.map((c) => c.label.split(' ').at(-1))).toEqual(['intake', 'analysis']);
    expect(harness.model.calls.map((c) => c.label.split(' ').at(-1))).toEqual(['analysis']);
    const ids = events.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(resumed.id).toBeGreaterThan(10_000);
  });

  it('starts a run again from its request when its process died before the first checkpoint', async () => {
    harness = new Harness();
    const dead = new ScriptedModel();
    dead.hangs = () => true;
    const a = harness.engine({ models: dead, leaseS: 0.05 });
    const { run } = harness.start(a);
    await harness.until(() => dead.calls.length > 0, 'the first call');
    const b = harness.engine({ leaseS: 2 });
    b.supervise();
    const events = await harness.read(b, run.id);
    expect(shape(events)).toEqual([
      'run_start',
      'node_enter:intake',
      'run_resumed:intake',
      'node_enter:intake',
      'token:intake',
      'node_exit:intake',
      'node_enter:analysis',
      'token:analysis',
      'node_exit:analysis',
      'node_enter:gate',
      'gate_waiting:gate',
    ]);
  });

  it('follows a run executed by another process: the same events under the same ids', async () => {
    harness = new Harness();
    const a = harness.engine();
    const b = harness.engine();
    harness.model.tokens = Array.from({ length: 30 }, (_, i) => `${i} `);
    harness.model.delayMs = 2;
    const { run } = harness.start(a);
    const [own, other] = await Promise.all([harness.read(a, run.id), harness.read(b, run.id)]);
    expect(other).toEqual(own);
  });

  it('acts once on a gate whose deadline passed, whichever process sees it first', async () => {
    harness = new Harness([reviewAgent('review', { expiry: { after_s: 0.05, action: 'reject', target: null } })]);
    // Leases long enough that the run, once resumed, is not taken over between its gate_expired and its end.
    const a = harness.engine({ leaseS: 1 });
    const b = harness.engine({ leaseS: 1 });
    const { run } = harness.start(a);
    const gateId = (await harness.read(a, run.id)).at(-1)!.id;
    a.supervise();
    b.supervise();
    await harness.until(() => harness.stores.row(run.id)?.status === 'rejected', 'the expiry');
    const rest = await harness.read(b, run.id, gateId);
    expect(shape(rest)).toEqual(['gate_expired:gate', 'run_rejected']);
    expect(rest.at(-1)!.event).toMatchObject({ reason: 'nobody decided the gate after 0.05s' });
  });
});

describe('reading a run', () => {
  it('ends a reader whose Last-Event-ID is at or past the end with the run, live and stored', async () => {
    harness = new Harness();
    const engine = harness.engine();
    harness.model.tokens = Array.from({ length: 20 }, (_, i) => `${i} `);
    harness.model.delayMs = 2;
    const { run } = harness.start(engine);
    const live = await harness.read(engine, run.id, 2 ** 31 - 1);
    expect(live).toEqual([]);
    expect(await harness.read(engine, run.id, 5000)).toEqual([]);
    expect(await engine.nothingAfter(run.id, 5000)).toBe(true);
  });

  it('replays a run that waits at a gate up to its gate_waiting, and on past it once decided', async () => {
    harness = new Harness();
    const engine = harness.engine();
    const { run } = harness.start(engine);
    const head = await harness.read(engine, run.id);
    const gateId = head.at(-1)!.id;
    expect(await engine.nothingAfter(run.id, gateId)).toBe(true);
    expect(await engine.nothingAfter(run.id, 1)).toBe(false);
    await engine.decide(approve(run.id, gateId));
    const whole = await harness.read(engine, run.id);
    expect(whole.slice(0, head.length)).toEqual(head);
    expect(whole.at(-1)!.event.type).toBe('run_done');
  });

  it('answers a fork from past a gate with that gate, shown the forked text, and runs nothing after it', async () => {
    harness = new Harness();
    const engine = harness.engine();
    const { run } = harness.start(engine);
    const gateId = (await harness.read(engine, run.id)).at(-1)!.id;
    await engine.decide(approve(run.id, gateId));
    await harness.read(engine, run.id, gateId);
    const history = await engine.history(reviewAgent(), run.threadId);
    const pastGate = history.find((c) => c.node === 'gate' && c.next.includes('output'))!;
    const calls = harness.model.calls.length;
    const fork = harness.start(engine, 'publish mine', {
      threadId: run.threadId,
      newThread: null,
      forkedFrom: { checkpoint_id: pastGate.checkpoint_id, run_id: run.id, outputs: { analysis: 'nobody saw this' } },
    });
    expect(await fork.outcome).toEqual({ outcome: 'started' });
    const events = await harness.read(engine, fork.run.id);
    expect(shape(events)).toEqual(['run_start', 'node_enter:gate', 'gate_waiting:gate']);
    expect(events.at(-1)!.event).toMatchObject({ context: { analysis: 'nobody saw this' } });
    expect(harness.model.calls.length).toBe(calls);
  });
});
