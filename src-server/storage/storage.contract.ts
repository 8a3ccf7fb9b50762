import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROJECT_ID } from '../contracts/tenancy';
import type { PendingGate } from '../contracts/runs';
import { sleep } from './retry';
import { newRun, nodeWrite } from './run-fixture';
import type {
  EventStore,
  Lease,
  ModelCallStore,
  ModelCallWrite,
  LegEvent,
  NodeStore,
  NodeWrite,
  RunRecord,
  RunStore,
  RunWriteStore,
  ToolCallStore,
} from './types';

/** The stores under test, fresh, and how to let them go. */
export interface StoresUnderTest {
  runs: RunStore;
  events: EventStore;
  nodes: NodeStore;
  modelCalls: ModelCallStore;
  writes: RunWriteStore;
  toolCalls: ToolCallStore;
  close(): Promise<void>;
}

const GATE: PendingGate = {
  node: 'gate',
  question: 'Publish?',
  required_context: ['analysis'],
  context: { analysis: 'the analysis' },
  decide_role: 'member',
  approvals_needed: 2,
  on_expiry: null,
};

/**
 * The behaviour the run engine relies on from its stores (storage/types.ts), one suite for every implementation:
 * PostgreSQL (test/storage/postgres-stores.int.test.ts) and the in-memory twins (memory/memory-stores.test.ts). A
 * twin that passed tests the database would fail would make the engine's unit tests lie.
 */
export function storageContract(name: string, open: () => Promise<StoresUnderTest>): void {
  describe(`the run engine's stores: ${name}`, () => {
    let stores: StoresUnderTest;
    beforeAll(async () => {
      stores = await open();
    });
    afterAll(async () => {
      await stores?.close();
    });

    const lease: Lease = { owner: 'process-a', leaseS: 30 };
    /** The first leg of a run process-a started. */
    const firstLeg = { owner: lease.owner, attempt: 1 };
    const append = (events: LegEvent[]) => stores.writes.write({ events, nodes: [], calls: [] });
    const writeNodes = (nodes: NodeWrite[]) => stores.writes.write({ events: [], nodes, calls: [] });
    const recordCalls = (calls: ModelCallWrite[]) => stores.writes.write({ events: [], nodes: [], calls });
    const event = (runId: string, seq: number, type = 'token') => ({
      runId,
      seq,
      type,
      data: JSON.stringify({ type, n: seq }),
      holder: { owner: lease.owner, attempt: 1 },
    });
    /** A run started by process-a and paused at its gate, its gate_waiting under id 3. */
    async function waitingRun(expiresAt: Date | null = null) {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      await append([event(run.id, 1, 'run_start'), event(run.id, 2)]);
      expect(
        await stores.runs.pause(run.id, firstLeg, { gate: GATE, checkpointId: 'cp-1', expiresAt }, [
          event(run.id, 3, 'gate_waiting'),
        ]),
      ).toBe(true);
      return run;
    }

    it('starts a run, with its thread, leased to its process', async () => {
      const run = newRun();
      expect(await stores.runs.start(run, lease, 10_000)).toEqual({ outcome: 'started' });
      expect(await stores.runs.get(run.id)).toMatchObject({
        id: run.id,
        threadId: run.threadId,
        projectId: DEFAULT_PROJECT_ID,
        status: 'running',
        attempts: 1,
        seqReserved: 10_000,
        eventSeq: 0,
        resume: null,
      });
      expect(await stores.runs.progress(run.id)).toEqual({ status: 'running', eventSeq: 0, executing: true });
      expect(await stores.runs.renewLeases(lease)).toContain(run.id);
    });

    it('writes nothing for a thread with an active run, and answers that run', async () => {
      const first = newRun();
      await stores.runs.start(first, lease, 10_000);
      const second = newRun({ threadId: first.threadId, newThread: null });
      expect(await stores.runs.start(second, lease, 10_000)).toEqual({
        outcome: 'active',
        active: { id: first.id, status: 'running' },
      });
      expect(await stores.runs.get(second.id)).toBeUndefined();
    });

    it("holds a user's local-runtime runs to her limit, counting no cloud run", async () => {
      const user = randomUUID();
      await stores.runs.start(newRun({ createdBy: user, localCap: 2 }), lease, 10_000);
      await stores.runs.start(newRun({ createdBy: user, localRuntime: false, localCap: 2 }), lease, 10_000);
      await stores.runs.start(newRun({ createdBy: user, localCap: 2 }), lease, 10_000);
      const refused = newRun({ createdBy: user, localCap: 2 });
      expect(await stores.runs.start(refused, lease, 10_000)).toEqual({ outcome: 'over_limit', going: 2 });
      expect(await stores.runs.get(refused.id)).toBeUndefined();
      expect(
        await stores.runs.start(newRun({ createdBy: user, localRuntime: false, localCap: 2 }), lease, 10_000),
      ).toEqual({ outcome: 'started' });
    });

    it('queues runs behind a busy thread in order, and starts the head of the line only when the thread is free', async () => {
      const first = newRun();
      await stores.runs.start(first, lease, 10_000);
      const [second, third] = [1, 2].map(() =>
        newRun({ threadId: first.threadId, newThread: null, strategy: 'enqueue' }),
      );
      expect(await stores.runs.start(second!, lease, 10_000)).toEqual({
        outcome: 'queued',
        active: { id: first.id, status: 'running' },
        position: 1,
      });
      expect(await stores.runs.start(third!, lease, 10_000)).toMatchObject({ outcome: 'queued', position: 2 });
      expect(await stores.runs.progress(second!.id)).toEqual({ status: 'queued', eventSeq: 1, executing: true });
      expect((await stores.events.after(second!.id, 0, 10)).map((e) => e.type)).toEqual(['run_queued']);
      // A reject finds the line too.
      expect(await stores.runs.start(newRun({ threadId: first.threadId, newThread: null }), lease, 10_000)).toEqual({
        outcome: 'active',
        active: { id: first.id, status: 'running' },
      });
      expect(await stores.runs.claimQueued(lease, 10_000, first.threadId)).toBeUndefined();
      await stores.runs.finish(first.id, firstLeg, { status: 'completed', output: 'ok' }, [
        event(first.id, 2, 'run_done'),
      ]);
      const claims = await Promise.all(
        ['process-b', 'process-c'].map((owner) => stores.runs.claimQueued({ owner, leaseS: 30 }, 10_000)),
      );
      const claimed = claims.filter((c) => c !== undefined);
      expect(claimed).toHaveLength(1);
      expect(claimed[0]).toMatchObject({ id: second!.id, status: 'running', attempts: 1, eventSeq: 1 });
      expect(claimed[0]!.seqReserved).toBeGreaterThanOrEqual(10_001);
      expect(await stores.runs.claimQueued(lease, 10_000, first.threadId)).toBeUndefined();
      expect(await stores.runs.cancel(second!.id, null)).toBe(true);
      expect(await stores.runs.claimQueued(lease, 10_000, first.threadId)).toMatchObject({ id: third!.id });
    });

    it('interrupts: cancels the queued runs and the active one, and starts the new run', async () => {
      const first = newRun();
      await stores.runs.start(first, lease, 10_000);
      const queued = newRun({ threadId: first.threadId, newThread: null, strategy: 'enqueue' });
      await stores.runs.start(queued, lease, 10_000);
      const next = newRun({ threadId: first.threadId, newThread: null, strategy: 'interrupt' });
      expect(await stores.runs.start(next, lease, 10_000)).toEqual({ outcome: 'started' });
      for (const id of [first.id, queued.id]) {
        expect(await stores.runs.get(id)).toMatchObject({
          status: 'cancelled',
          endReason: `interrupted by run ${next.id}`,
        });
      }
      expect(await stores.runs.get(next.id)).toMatchObject({ status: 'running' });
    });

    it('rolls back: removes the active run, unless a person decided at one of its stops', async () => {
      const first = newRun();
      await stores.runs.start(first, lease, 10_000);
      await append([event(first.id, 1, 'run_start')]);
      const next = newRun({ threadId: first.threadId, newThread: null, strategy: 'rollback' });
      expect(await stores.runs.start(next, lease, 10_000)).toEqual({ outcome: 'started' });
      expect(await stores.runs.get(first.id)).toBeUndefined();
      expect(await stores.events.after(first.id, 0, 10)).toEqual([]);

      const decided = await waitingRun();
      await stores.runs.atStop(decided.id, async (stop) => {
        await stop!.record({
          kind: 'approve',
          decidedBy: { id: randomUUID(), name: 'ann' },
          role: 'member',
          round: 1,
          reason: null,
          edits: null,
          response: null,
          routeTo: null,
          outcome: null,
          toolCallId: null,
          arguments: null,
          argumentsSha256: null,
          via: null,
        });
      });
      const refused = newRun({ threadId: decided.threadId, newThread: null, strategy: 'rollback' });
      expect(await stores.runs.start(refused, lease, 10_000)).toEqual({
        outcome: 'not_rollbackable',
        active: { id: decided.id, status: 'waiting_approval' },
        why: 'decision',
      });
      expect(await stores.runs.get(decided.id)).toMatchObject({ status: 'waiting_approval' });
      expect(await stores.runs.get(refused.id)).toBeUndefined();
    });

    it('lets exactly one process claim a run whose lease lapsed, and counts the attempt', async () => {
      const run = newRun();
      await stores.runs.start(run, { owner: 'dead', leaseS: 0.05 }, 10_000);
      await sleep(120);
      const claims = await Promise.all(
        ['process-b', 'process-c'].map((owner) => stores.runs.claimLapsed({ owner, leaseS: 30 })),
      );
      const claimed = claims.filter((c) => c?.id === run.id);
      expect(claimed).toHaveLength(1);
      expect(claimed[0]).toMatchObject({ status: 'running', attempts: 2 });
    });

    it('lets go of the runs a process names, and only those, for any process to claim', async () => {
      const [kept, released] = [newRun(), newRun()];
      await stores.runs.start(kept, lease, 10_000);
      await stores.runs.start(released, lease, 10_000);
      await stores.runs.releaseLeases(lease.owner, [released.id]);
      const claimed = await stores.runs.claimLapsed({ owner: 'process-b', leaseS: 30 });
      expect(claimed).toMatchObject({ id: released.id, attempts: 2 });
      const stillOurs = await stores.runs.renewLeases(lease);
      expect(stillOurs).toContain(kept.id);
      expect(stillOurs).not.toContain(released.id);
    });

    it('hands the runs of a process that stops to another, counted as handovers', async () => {
      const [first, second] = [newRun(), newRun()];
      await stores.runs.start(first, lease, 10_000);
      await stores.runs.start(second, { owner: 'process-b', leaseS: 30 }, 10_000);
      await stores.runs.handOver(lease.owner);
      // Every lapsed run, earlier tests' included: the stopping process's is among them, process-b's is not.
      const claimed: RunRecord[] = [];
      const taker = { owner: 'process-c', leaseS: 30 };
      for (let run = await stores.runs.claimLapsed(taker); run; run = await stores.runs.claimLapsed(taker)) {
        claimed.push(run);
      }
      // Counted as an execution (run_resumed says attempt 2) and as a handover, which the limit of attempts leaves out.
      expect(claimed.find((run) => run.id === first.id)).toMatchObject({
        status: 'running',
        attempts: 2,
        handovers: 1,
      });
      expect(claimed.map((run) => run.id)).not.toContain(second.id);
      expect(await stores.runs.renewLeases({ owner: 'process-b', leaseS: 30 })).toContain(second.id);
    });

    it('ends a leg at a gate with its last event, only for the process that holds the run', async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      const paused = { gate: GATE, checkpointId: 'cp-1', expiresAt: null };
      expect(
        await stores.runs.pause(run.id, { owner: 'someone-else', attempt: 1 }, paused, [
          event(run.id, 1, 'gate_waiting'),
        ]),
      ).toBe(false);
      expect(await stores.events.after(run.id, 0, 10)).toEqual([]);
      expect(await stores.runs.pause(run.id, firstLeg, paused, [event(run.id, 1, 'gate_waiting')])).toBe(true);
      expect(await stores.runs.progress(run.id)).toEqual({ status: 'waiting_approval', eventSeq: 1, executing: false });
      expect((await stores.events.after(run.id, 0, 10)).map((e) => e.type)).toEqual(['gate_waiting']);
    });

    it('finishes a run once, with its final event', async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      const done = [event(run.id, 1, 'run_done')];
      expect(await stores.runs.finish(run.id, firstLeg, { status: 'completed', output: 'ok' }, done)).toBe(true);
      expect(await stores.runs.progress(run.id)).toEqual({ status: 'completed', eventSeq: 1, executing: false });
      const again = [event(run.id, 2, 'run_error')];
      expect(await stores.runs.finish(run.id, firstLeg, { status: 'error', errorDetail: 'x' }, again)).toBe(false);
      expect((await stores.events.after(run.id, 0, 10)).map((e) => e.type)).toEqual(['run_done']);
      expect(await stores.runs.renewLeases(lease)).not.toContain(run.id);
    });

    it('ends a run only for its latest leg: not for an older leg of a process that took the run back', async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      // process-a stalls past its lease: process-b takes the run over, stalls in turn, and process-a takes it back.
      await stores.runs.releaseLeases(lease.owner, [run.id]);
      expect(await stores.runs.claimLapsed({ owner: 'process-b', leaseS: 30 })).toMatchObject({ attempts: 2 });
      await stores.runs.releaseLeases('process-b', [run.id]);
      expect(await stores.runs.claimLapsed(lease)).toMatchObject({ attempts: 3 });
      const a3 = { owner: lease.owner, attempt: 3 };
      // The first leg, still running in process-a, ends or reserves ids: refused, its owner is the run's again.
      await stores.runs.reserveSeq(run.id, firstLeg, 90_000);
      const paused = { gate: GATE, checkpointId: 'cp-1', expiresAt: null };
      expect(await stores.runs.pause(run.id, firstLeg, paused, [event(run.id, 600, 'gate_waiting')])).toBe(false);
      const early = [event(run.id, 601, 'run_done')];
      expect(await stores.runs.finish(run.id, firstLeg, { status: 'completed', output: 'old' }, early)).toBe(false);
      expect(await stores.runs.progress(run.id)).toEqual({ status: 'running', eventSeq: 0, executing: true });
      // The leg of attempt 3 ends it, after the ids its predecessors reserved.
      await stores.runs.reserveSeq(run.id, a3, 30_000);
      const done = [event(run.id, 30_001, 'run_done')];
      expect(await stores.runs.finish(run.id, a3, { status: 'completed', output: 'ok' }, done)).toBe(true);
      expect((await stores.events.after(run.id, 0, 10)).map((e) => e.seq)).toEqual([30_001]);
      expect((await stores.runs.get(run.id))?.seqReserved).toBe(30_000);
    });

    it('cancels a running or waiting run once, storing its run_cancelled after every reserved id', async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      await writeNodes([nodeWrite(run.id, 'intake#1', 'intake')]);
      expect(await stores.runs.cancel(run.id, 'enough')).toBe(true);
      expect(await stores.runs.cancel(run.id, 'again')).toBe(false);
      const stored = await stores.events.after(run.id, 0, 10);
      expect(stored.map((e) => [e.seq, e.type])).toEqual([[10_001, 'run_cancelled']]);
      expect(JSON.parse(stored[0]!.data)).toEqual({ type: 'run_cancelled', run_id: run.id, reason: 'enough' });
      expect(await stores.runs.get(run.id)).toMatchObject({
        status: 'cancelled',
        endReason: 'enough',
        eventSeq: 10_001,
      });
      expect(await stores.nodes.dropRunning(run.id)).toEqual([]);

      const waiting = await waitingRun();
      expect(await stores.runs.cancel(waiting.id, null)).toBe(true);
      expect(await stores.runs.progress(waiting.id)).toMatchObject({ status: 'cancelled' });
    });

    it('records decisions at a stop, one approval a person a round, and claims the run to resume', async () => {
      const run = await waitingRun();
      const decision = {
        kind: 'approve' as const,
        decidedBy: { id: 'ann', name: 'Ann' },
        role: 'member' as const,
        round: 0,
        reason: null,
        edits: null,
        response: null,
        routeTo: null,
        outcome: null,
        toolCallId: null,
        arguments: null,
        argumentsSha256: null,
        via: null,
      };
      await stores.runs.atStop(run.id, async (stop) => {
        expect(stop?.run).toMatchObject({ id: run.id, eventSeq: 3, pendingGate: GATE, gateCheckpointId: 'cp-1' });
        expect(await stop!.record(decision)).toBe(true);
        expect(await stop!.record(decision)).toBe(false);
        expect(await stop!.record({ ...decision, kind: 'edit', round: 1, edits: { analysis: 'better' } })).toBe(true);
        await stop!.showEdits({ analysis: 'better' });
      });
      await stores.runs.atStop(run.id, async (stop) => {
        expect(stop!.run.pendingGate.context).toEqual({ analysis: 'better' });
        const recorded = await stop!.decisions();
        expect(recorded.map((d) => [d.kind, d.decidedBy.name, d.round])).toEqual([
          ['approve', 'Ann', 0],
          ['edit', 'Ann', 1],
        ]);
        const resume = {
          decision: { kind: 'approve' as const, reason: null, deciders: ['Ann'] },
          checkpointId: 'cp-1',
        };
        await stop!.claim(resume, { owner: 'process-b', leaseS: 30 }, 20_000);
      });
      expect(await stores.runs.get(run.id)).toMatchObject({
        status: 'running',
        attempts: 1,
        seqReserved: 20_000,
        resume: { decision: { kind: 'approve', deciders: ['Ann'] }, checkpointId: 'cp-1' },
      });
      await stores.runs.atStop(run.id, async (stop) => expect(stop).toBeUndefined());
    });

    it('hands over one gate whose deadline passed, to one process', async () => {
      const lapsed = await waitingRun(new Date(Date.now() - 1000));
      const later = await waitingRun(new Date(Date.now() + 60_000));
      const seen: string[] = [];
      for (;;) {
        const id = await stores.runs.atExpiredStop(async (stop) => stop.run.id);
        if (!id || seen.includes(id)) break;
        seen.push(id);
        // Expired, it is resumed: no longer waiting.
        await stores.runs.atStop(id, async (stop) =>
          stop!.claim(
            { decision: { kind: 'expire', reason: null, deciders: ['expiry'] }, checkpointId: null },
            lease,
            1,
          ),
        );
      }
      expect(seen).toContain(lapsed.id);
      expect(seen).not.toContain(later.id);
    });

    it('stores events once under their run and id, and reads them in pages', async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      await append([event(run.id, 1), event(run.id, 2), event(run.id, 3)]);
      await append([event(run.id, 2, 'other'), event(run.id, 4)]);
      expect((await stores.events.after(run.id, 0, 10)).map((e) => [e.seq, e.type])).toEqual([
        [1, 'token'],
        [2, 'token'],
        [3, 'token'],
        [4, 'token'],
      ]);
      expect((await stores.events.after(run.id, 1, 2)).map((e) => e.seq)).toEqual([2, 3]);
      expect(await stores.events.lastSeq(run.id)).toBe(4);
      expect(await stores.events.lastSeq(randomUUID())).toBe(0);
    });

    it("stores a leg's events only while the run is its leg's: not once taken over, even after it ended", async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      await append([event(run.id, 1, 'run_start')]);
      // process-a stalls past its lease: process-b takes the run over (attempt 2) and continues after the reserved ids.
      await stores.runs.releaseLeases(lease.owner, [run.id]);
      expect(await stores.runs.claimLapsed({ owner: 'process-b', leaseS: 30 })).toMatchObject({ id: run.id });
      const b = { owner: 'process-b', attempt: 2 };
      await append([{ ...event(run.id, 10_001, 'run_resumed'), holder: b }]);
      // process-a wakes and writes what it still held: refused, before the run ends and after.
      await append([event(run.id, 2), event(run.id, 3)]);
      const done = [event(run.id, 10_002, 'run_done')];
      expect(await stores.runs.finish(run.id, b, { status: 'completed', output: 'ok' }, done)).toBe(true);
      await append([event(run.id, 4)]);
      expect((await stores.events.after(run.id, 0, 10)).map((e) => e.seq)).toEqual([1, 10_001, 10_002]);

      // A cancel lets go of the run without handing it to anyone: what its leg sends until it hears of it is stored.
      const cancelled = newRun();
      await stores.runs.start(cancelled, lease, 10_000);
      expect(await stores.runs.cancel(cancelled.id, null)).toBe(true);
      await append([event(cancelled.id, 1, 'run_start')]);
      expect((await stores.events.after(cancelled.id, 0, 10)).map((e) => e.seq)).toEqual([1, 10_001]);
    });

    it('gives back a long run of tokens one by one under their ids, from any point in it, as they were written', async () => {
      const run = newRun();
      const other = newRun();
      await stores.runs.start(run, lease, 10_000);
      await stores.runs.start(other, lease, 10_000);
      // Texts a row of several events must not blur: newlines, quotes, backslashes, non-Latin text.
      const token = (runId: string, seq: number) => ({
        runId,
        seq,
        type: 'token',
        data: JSON.stringify({ type: 'token', node: 'analysis', text: `t${seq} "a"\n\\b ✓` }),
        holder: { owner: lease.owner, attempt: 1 },
      });
      const batch = [event(run.id, 1, 'node_enter')];
      for (let seq = 2; seq <= 300; seq++) batch.push(token(run.id, seq), token(other.id, seq));
      batch.push(event(run.id, 301, 'thinking'), event(run.id, 302, 'thinking'), event(run.id, 303, 'node_exit'));
      await append(batch);
      // A batch written again (its first commit's answer lost) stores nothing twice.
      await append(batch);
      // A later batch goes on where the first stopped.
      await append([token(run.id, 304), token(run.id, 305)]);

      const written = [...batch.filter((e) => e.runId === run.id), token(run.id, 304), token(run.id, 305)];
      const all = await stores.events.after(run.id, 0, 1000);
      expect(all).toEqual(written.map(({ seq, type, data }) => ({ seq, type, data })));
      for (const from of [0, 1, 2, 100, 128, 129, 130, 257, 299, 300, 302, 303]) {
        const page = await stores.events.after(run.id, from, 7);
        expect(page.map((e) => e.seq)).toEqual(
          written
            .filter((e) => e.seq > from)
            .map((e) => e.seq)
            .slice(0, 7),
        );
      }
      // Read in pages, one after the other, the run comes back whole.
      const paged: number[] = [];
      for (let page = await stores.events.after(run.id, 0, 50); page.length > 0;) {
        paged.push(...page.map((e) => e.seq));
        page = await stores.events.after(run.id, paged.at(-1)!, 50);
      }
      expect(paged).toEqual(written.map((e) => e.seq));
      expect(await stores.events.lastSeq(run.id)).toBe(305);
      expect((await stores.events.after(other.id, 0, 1000)).map((e) => e.seq)).toEqual(
        Array.from({ length: 299 }, (_, i) => i + 2),
      );
    });

    it('writes node rows whole under their key, drops the running ones of a dead leg, closes the open ones', async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      await writeNodes([nodeWrite(run.id, 'intake#1', 'intake'), nodeWrite(run.id, 'analysis#1', 'analysis')]);
      await writeNodes([{ ...nodeWrite(run.id, 'intake#1', 'intake'), status: 'completed', exitedAt: 0 }]);
      expect(await stores.nodes.dropRunning(run.id)).toEqual(['analysis']);
      await writeNodes([nodeWrite(run.id, 'gate#1', 'gate', 'waiting_approval')]);
      await stores.nodes.closeOpen(run.id, 'cancelled');
      expect(await stores.nodes.dropRunning(run.id)).toEqual([]);
    });

    it("writes a run's events, node rows and model calls together, each kind as it is written alone", async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      const call = modelCall(run.id, 'intake');
      await stores.writes.write({
        events: [event(run.id, 1, 'run_start'), event(run.id, 2, 'node_exit')],
        nodes: [{ ...nodeWrite(run.id, 'intake#1', 'intake'), status: 'completed', exitedAt: 0 }],
        calls: [call],
      });
      expect((await stores.events.after(run.id, 0, 10)).map((e) => e.type)).toEqual(['run_start', 'node_exit']);
      expect((await stores.modelCalls.ofRun(run.id)).map((c) => c.id)).toEqual([call.id]);
      // The row was written closed: nothing of it is left running.
      expect(await stores.nodes.dropRunning(run.id)).toEqual([]);
    });

    it("keeps a tool call's first decision, and over it only the decision of a later start (what was last approved)", async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      const id = `${run.id}:intake:1:0:0`;
      const proposed = await stores.toolCalls.propose({
        id,
        runId: run.id,
        node: 'intake',
        tool: 'project.write_file',
        arguments: '{"content":"a"}',
        argumentsSha256: 'sha-a',
        policy: 'ask',
        replay: null,
        rerunnable: false,
      });
      expect(proposed).toMatchObject({ created: true, record: { decision: null, attempts: 0 } });
      const decision = (kind: 'approve' | 'edit', content: string, rerunAfter?: number) => ({
        kind,
        reason: null,
        deciders: ['Ann'],
        call_id: id,
        arguments: `{"content":"${content}"}`,
        arguments_sha256: `sha-${content}`,
        ...(rerunAfter === undefined ? {} : { rerun_after: rerunAfter }),
      });
      const kept = async () => (await stores.toolCalls.propose({ ...proposed.record, id })).record.decision;
      await stores.toolCalls.decide(id, decision('edit', 'b'));
      await stores.toolCalls.decide(id, decision('approve', 'a'));
      expect(await kept()).toMatchObject({ kind: 'edit', arguments_sha256: 'sha-b' });
      expect(await stores.toolCalls.start(id, 0)).toBe(true);
      await stores.toolCalls.decide(id, decision('edit', 'c', 1));
      await stores.toolCalls.decide(id, decision('approve', 'b', 1));
      expect(await kept()).toMatchObject({ kind: 'edit', arguments_sha256: 'sha-c', rerun_after: 1 });
      expect(await stores.toolCalls.start(id, 1)).toBe(true);
      expect(await stores.toolCalls.start(id, 1)).toBe(false);
    });

    it("records each model call once under its id, with its run's project, user and agent", async () => {
      const run = newRun();
      await stores.runs.start(run, lease, 10_000);
      const priced = modelCall(run.id, 'analysis', { inputTokens: 1200, outputTokens: 300, costUsd: 0.0021 });
      const unpriced = modelCall(run.id, 'output', { inputPerMtok: null, outputPerMtok: null, costUsd: null });
      await recordCalls([priced, unpriced]);
      // A write tried again after a failure, and a call of a run that does not exist: nothing more is stored.
      await recordCalls([priced, modelCall(randomUUID(), 'analysis')]);
      // Calls written in one batch share their time: their order among themselves is not kept.
      const recorded = (await stores.modelCalls.ofRun(run.id)).sort((a, b) => a.node.localeCompare(b.node));
      expect(recorded).toEqual([
        { ...priced, projectId: DEFAULT_PROJECT_ID, userId: run.createdBy, agent: run.agent },
        { ...unpriced, projectId: DEFAULT_PROJECT_ID, userId: run.createdBy, agent: run.agent },
      ]);
    });
  });
}

function modelCall(runId: string, node: string, extra: Partial<ModelCallWrite> = {}): ModelCallWrite {
  return {
    id: randomUUID(),
    runId,
    node,
    provider: 'cloud_c',
    model: 'cloud_c:gpt-test',
    inputTokens: 100,
    outputTokens: 20,
    durationMs: 812.5,
    loadMs: null,
    generationMs: null,
    queueWaitMs: null,
    inputPerMtok: 0.4,
    outputPerMtok: 1.6,
    costUsd: 0.000072,
    ...extra,
  };
}
