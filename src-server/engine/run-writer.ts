import type { Logger } from '../log';
import type { LegEvent, ModelCallWrite, NodeWrite, RunWriteStore } from '../storage/types';
import { BatchWriter } from './batch-writer';
import type { IsTransient } from '../storage/retry';

/** One thing a run records as it goes. */
export type RunWrite =
  { kind: 'event'; event: LegEvent } | { kind: 'node'; row: NodeWrite } | { kind: 'call'; call: ModelCallWrite };

/**
 * The one writer of what the runs of this process record — their events (events/event-log.ts), node rows
 * (node-log.ts) and model calls (model-call-log.ts) — in batches shared by all of them and by all three kinds: a
 * node's end (its event, its row and its model call, pushed in one turn of the event loop) is one statement, and so
 * one commit. A flush waits for every record pushed before it, of any kind: a run's end that waits for its node rows
 * waits for its events too, which it needs stored before its final event in any case.
 */
export class RunWriter {
  private readonly writer: BatchWriter<RunWrite>;
  private readonly eventsStored = new Set<(events: LegEvent[]) => void>();

  constructor(store: RunWriteStore, options: { isTransient: IsTransient; log: Logger }) {
    this.writer = new BatchWriter<RunWrite>({
      write: (records) => store.write(partition(records)),
      isTransient: options.isTransient,
      log: options.log,
      what: 'run records',
      // Everything that waits, within reason: at a thousand streams the runs publish 40 000 events a second, and a
      // statement takes a turn of an event loop that is 200–500 ms late. Taken 2,000 at a time they piled up in memory
      // (500 000 unstored events, 400 MiB, at 25 s) and each run's end waited for the rest to drain
      // (docs/performance.md#the-events-writer-behind-2026-12-07). A statement of 50,000 events is a few MiB of JSON.
      maxBatch: 50_000,
      onWritten: (records) => {
        const events = records.flatMap((r) => (r.kind === 'event' ? [r.event] : []));
        if (events.length > 0) for (const told of this.eventsStored) told(events);
      },
    });
  }

  push(record: RunWrite): void {
    this.writer.push(record);
  }

  /**
   * Tells `told` of the events of each batch once they are stored (or dropped: the database refused them, or their
   * run was no longer their leg's).
   */
  onEventsStored(told: (events: LegEvent[]) => void): void {
    this.eventsStored.add(told);
  }

  /** Resolves once every record pushed so far is stored; with `withinMs`, as BatchWriter.flush says. */
  flush(withinMs?: number): Promise<void> {
    return this.writer.flush(withinMs);
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}

/**
 * A batch by kind; of several writes of one node row only the last state goes (one statement may not write a row
 * twice).
 */
function partition(records: readonly RunWrite[]) {
  const events: LegEvent[] = [];
  const nodes = new Map<string, NodeWrite>();
  const calls: ModelCallWrite[] = [];
  for (const record of records) {
    if (record.kind === 'event') events.push(record.event);
    else if (record.kind === 'node') nodes.set(`${record.row.runId}/${record.row.key}`, record.row);
    else calls.push(record.call);
  }
  return { events, nodes: [...nodes.values()], calls };
}
