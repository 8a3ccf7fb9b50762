import { afterEach, describe, expect, it } from 'vitest';
import { getLogger } from '../../log';
import type { RunProgress, RunWrites, StoredEvent } from '../../storage/types';
import { RunWriter } from '../run-writer';
import { EventLog } from './event-log';

const RUN = 'run-1';

/** A store whose writes wait until `release()`: the events of a leg stay in memory while the database is slow. */
class SlowStore {
  readonly rows: StoredEvent[] = [];
  /** The number of events of each write, in order. */
  readonly writes: number[] = [];
  private held: (() => void)[] = [];
  holding = false;

  async write({ events }: RunWrites): Promise<void> {
    this.writes.push(events.length);
    if (this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
    for (const e of events) this.rows.push({ seq: e.seq, type: e.type, data: e.data });
  }

  async after(_runId: string, afterSeq: number, limit: number): Promise<StoredEvent[]> {
    return this.rows.filter((row) => row.seq > afterSeq).slice(0, limit);
  }

  async lastSeq(): Promise<number> {
    return this.rows.at(-1)?.seq ?? 0;
  }

  release(): void {
    this.holding = false;
    for (const resolve of this.held.splice(0)) resolve();
  }
}

let log: EventLog | undefined;
let writer: RunWriter | undefined;
afterEach(async () => {
  await log?.close();
  await writer?.close();
});

function eventLog(store: SlowStore, progress: RunProgress): EventLog {
  writer = new RunWriter(store, { isTransient: () => false, log: getLogger('svc.engine') });
  log = new EventLog({
    store,
    records: writer,
    runs: { progress: async () => progress, reserveSeq: async () => undefined },
    isTransient: () => false,
    log: getLogger('svc.engine'),
    pollMs: 1000,
    waitMs: 1000,
  });
  return log;
}

describe('the event log', () => {
  it('joins a reader to a leg taken over here across the ids the dead process reserved and never used', async () => {
    // The dead process stored events 1 and 2 and had reserved ids up to 10 000; this process continues after them.
    const store = new SlowStore();
    store.rows.push({ seq: 1, type: 'run_start', data: '{"type":"run_start"}' });
    store.rows.push({ seq: 2, type: 'node_enter', data: '{"type":"node_enter"}' });
    const events = eventLog(store, { status: 'running', eventSeq: 0, executing: true });
    store.holding = true;
    const leg = events.openLeg(RUN, 10_000, 20_000, { owner: 'me', attempt: 1 });
    leg.emit({ type: 'run_resumed', run_id: RUN, attempt: 2, node: 'intake' });

    // A reader who saw event 2 re-attaches while the leg's first event is still on its way to the store.
    const seen: number[] = [];
    const reading = (async () => {
      for await (const batch of events.join(RUN, 2)) {
        seen.push(...batch.map((e) => e.id));
        if (seen.includes(10_002)) return;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 20));
    leg.emit({ type: 'node_enter', node: 'intake' });
    await reading;
    store.release();
    expect(seen).toEqual([10_001, 10_002]);
  });

  it("hands a reader who was busy when the run ended the events its leg sent meanwhile, the run's end among them", async () => {
    const store = new SlowStore();
    const progress: RunProgress = { status: 'running', eventSeq: 0, executing: true };
    const events = eventLog(store, progress);
    const leg = events.openLeg(RUN, 0, 10_000, { owner: 'me', attempt: 1 });
    leg.emit({ type: 'run_start', run_id: RUN, thread_id: 't', agent: 'summary', model: 'm' });

    // The reader takes its first batch, then is busy (writing to a slow client) while the run finishes and its leg
    // closes: it asks for more only after that.
    const reader = events.join(RUN, 0);
    const first = await reader.next();
    expect(first.done ? [] : first.value.map((e) => e.id)).toEqual([1]);
    leg.emit({ type: 'token', node: 'output', text: 'last' });
    const ended = await leg.final({ type: 'run_done', run_id: RUN, output: 'done' }, async (row) => {
      store.rows.push({ seq: row.seq, type: row.type, data: row.data });
      Object.assign(progress, { status: 'completed', eventSeq: row.seq, executing: false });
      return true;
    });
    expect(ended).toBe(true);
    leg.close();

    const rest: string[] = [];
    for (let next = await reader.next(); !next.done; next = await reader.next()) {
      rest.push(...next.value.map((e) => e.type));
    }
    expect(rest).toEqual(['token', 'run_done']);
  });

  it('stores what a thousand streaming runs publish during a slow write in the next statement, and then forgets it', async () => {
    // At a thousand streams a write waits for a busy event loop; the runs publish 40 000 events a second meanwhile.
    // Taken a few thousand at a time they would pile up in memory faster than they are stored.
    const store = new SlowStore();
    const events = eventLog(store, { status: 'running', eventSeq: 0, executing: true });
    store.holding = true;
    const legs = Array.from({ length: 1000 }, (_, i) =>
      events.openLeg(`run-${i}`, 0, 10_000, { owner: 'me', attempt: 1 }),
    );
    legs[0]!.emit({ type: 'node_enter', node: 'output' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.writes).toEqual([1]);
    for (let token = 0; token < 40; token++) {
      for (const leg of legs) leg.emit({ type: 'token', node: 'output', text: `t${token}` });
    }
    expect(events.backlog).toBe(40_001);
    store.release();
    await events.flush();
    expect(store.writes).toEqual([1, 40_000]);
    expect(events.backlog).toBe(0);
  });
});
