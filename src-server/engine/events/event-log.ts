import type { RunEvent } from '../../contracts/events';
import type { Logger } from '../../log';
import { retryTransient, type IsTransient } from '../../storage/retry';
import type { RunWriter } from '../run-writer';
import type {
  EventStore,
  LegEvent,
  LegHolder,
  NewEvent,
  RunProgress,
  RunStore,
  StoredEvent,
} from '../../storage/types';
import { Inbox } from './inbox';
import { LoggedEvent, RUN_ENDING_EVENTS } from './logged-event';

/** Stored events read at once, so a long run is never read into memory whole. */
export const EVENT_PAGE = 1000;

/**
 * Event ids are reserved in the run's row in blocks of this size, ahead of use, so that a process taking a run over
 * continues after every id a client could have seen (events in memory when a process dies are lost, their ids are
 * not given again).
 */
export const SEQ_BLOCK = 10_000;

export interface EventLogOptions {
  /** Where stored events are read. */
  store: EventStore;
  /** Where events are written, with the rest of what runs record. */
  records: RunWriter;
  runs: Pick<RunStore, 'progress' | 'reserveSeq'>;
  isTransient: IsTransient;
  log: Logger;
  /** How often a reader of a run executed elsewhere looks for new events when no notification came. */
  pollMs: number;
  /** How long a leg's end waits for its events to be stored while the database is away. */
  waitMs: number;
}

/** The events of the leg of a run that this process executes: those not yet stored stay in memory. */
class Leg {
  /** Events of this leg not yet known to be stored, oldest first; the ones before are read from the store. */
  unstored: LoggedEvent[] = [];
  readonly readers = new Set<Inbox>();
  ended = false;
  /** The id of the last event published. */
  head: number;

  constructor(
    readonly runId: string,
    /** The id of the last event before this leg's first. */
    readonly before: number,
    /** Who executes this leg: its events are stored only while the run is still theirs. */
    readonly holder: LegHolder,
  ) {
    this.head = before;
  }

  /** The id after which this leg's events are all in memory. */
  get memoryFrom(): number {
    return (this.unstored[0]?.id ?? this.head + 1) - 1;
  }
}

/** Readers, in this process, of a run whose events another process stores: one reader of the store for all. */
class Tail {
  readonly readers = new Set<Inbox>();
  private fetching = false;
  private again = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly runId: string,
    /** The last event handed to the readers. */
    public cursor: number,
    private readonly log: EventLog,
    pollMs: number,
  ) {
    this.timer = setInterval(() => void this.fetch(), pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async fetch(): Promise<void> {
    if (this.fetching) {
      this.again = true;
      return;
    }
    this.fetching = true;
    try {
      do {
        this.again = false;
        await this.log.readInto(this);
      } while (this.again && this.readers.size > 0);
    } finally {
      this.fetching = false;
    }
  }
}

/**
 * A run's events, whichever process executes it: **publish** (the executing process numbers each event, hands it to
 * the readers it has at once, and stores it in batches shared by all its runs) and **join** (a reader anywhere gets
 * the stored events after its Last-Event-ID, then the new ones as they come, to the run's end or the gate it waits
 * at). Stored events are the truth: a finished run replays exactly what was sent live, under the same ids.
 */
export class EventLog {
  private readonly legs = new Map<string, Leg>();
  private readonly tails = new Map<string, Tail>();
  private readonly writer: RunWriter;
  private published = 0;
  private written = 0;

  constructor(private readonly options: EventLogOptions) {
    this.writer = options.records;
    this.writer.onEventsStored((events) => {
      this.written += events.length;
      this.forgetStored(events);
    });
  }

  /** Stored events are read from the store by whoever joins later: memory keeps only what is not stored yet. */
  private forgetStored(events: LegEvent[]): void {
    const upTo = new Map<string, number>();
    for (const event of events) upTo.set(event.runId, Math.max(upTo.get(event.runId) ?? 0, event.seq));
    for (const [runId, seq] of upTo) {
      const leg = this.legs.get(runId);
      if (!leg) continue;
      let kept = 0;
      while (kept < leg.unstored.length && leg.unstored[kept]!.id <= seq) kept++;
      if (kept > 0) leg.unstored.splice(0, kept);
    }
  }

  /** Events pushed by this process's runs and not yet stored. */
  get backlog(): number {
    return this.published - this.written;
  }

  /**
   * Opens this process's leg of a run, whose next event gets id `lastSeq + 1`, with ids up to `reserved` reserved in
   * its row for the leg `holder`. The leg is the one publisher of the run's events until it ends.
   */
  openLeg(runId: string, lastSeq: number, reserved: number, holder: LegHolder): LegPublisher {
    const leg = new Leg(runId, lastSeq, holder);
    this.legs.set(runId, leg);
    return new LegPublisher(leg, this, reserved);
  }

  /** Stores an event of a leg (in the shared batches) and hands it to the leg's readers. */
  publish(leg: Leg, event: LoggedEvent, store = true): void {
    leg.head = event.id;
    if (store) {
      leg.unstored.push(event);
      this.published++;
      this.writer.push({
        kind: 'event',
        event: { runId: leg.runId, seq: event.id, type: event.type, data: event.data, holder: leg.holder },
      });
    }
    for (const reader of leg.readers) reader.push([event]);
  }

  /** Stores everything published so far. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** As flush(), but fails once the database has been away for the time a leg waits for it. */
  flushWithin(): Promise<void> {
    return this.writer.flush(this.options.waitMs);
  }

  /**
   * A leg ends: with its final event (run_done, gate_waiting…, already stored with the run's row and published), or
   * without one (its process lost the run or shuts down): its readers then go on from the store, wherever the run
   * continues.
   */
  closeLeg(leg: Leg): void {
    leg.ended = true;
    if (this.legs.get(leg.runId) === leg) this.legs.delete(leg.runId);
    const readers = [...leg.readers];
    leg.readers.clear();
    // Readers look again at where the run stands: past its end they end; otherwise they read on from the store, once
    // what this leg published is there.
    void this.writer.flush().then(() => {
      for (const reader of readers) reader.poke();
    });
  }

  /** The store announced events of a run up to `seq` (from any process, this one included). */
  stored(runId: string, seq: number): void {
    const tail = this.tails.get(runId);
    if (tail && seq > tail.cursor) void tail.fetch();
  }

  /** After the notification connection was lost: whatever was announced meanwhile is read. */
  catchUp(): void {
    for (const tail of this.tails.values()) void tail.fetch();
  }

  /** Stores what is published, and stops reading for readers here (the writer is closed by its owner). */
  async close(): Promise<void> {
    await this.writer.flush();
    for (const tail of this.tails.values()) tail.stop();
    this.tails.clear();
  }

  /**
   * A run's events after `afterId`, in batches, to its end: the run's final event, or the gate_waiting of the gate
   * it waits at (a gate it went on past does not end it). A reader who has seen as far already (a Last-Event-ID at or
   * past the end) gets nothing and ends with the run all the same.
   */
  async *join(runId: string, afterId: number, signal?: AbortSignal): AsyncGenerator<LoggedEvent[]> {
    const inbox = new Inbox(afterId);
    let detach = () => {};
    const leave = () => inbox.end();
    signal?.addEventListener('abort', leave, { once: true });
    try {
      while (!inbox.ended) {
        const leg = this.legs.get(runId);
        if (leg && !leg.ended && leg.memoryFrom <= inbox.cursor) {
          // Live here: what is in memory after the cursor, then each event as the leg publishes it. Every event the
          // leg ends with ends the reader: its gate_waiting is the gate the run now waits at.
          inbox.push(leg.unstored);
          leg.readers.add(inbox);
          detach = () => leg.readers.delete(inbox);
          while (!inbox.ended) {
            // Once the leg has ended, what it handed over while this reader was busy is still taken (its final event
            // among it): the cursor is past it, and the store is read only after the cursor.
            const legEnded = leg.ended;
            const batch = legEnded ? inbox.drain() : await inbox.take(signal);
            if (batch.length) yield batch;
            if (batch.some((event) => event.terminal)) return;
            if (legEnded) break;
          }
          detach();
          continue;
        }
        // What this process's leg no longer holds in memory was stored before this point, so the read below sees it.
        const storedUpTo = leg && !leg.ended ? leg.memoryFrom : undefined;
        // Where the run stands first, then what is stored: a run that is not running had its last event stored in
        // the statement that changed its status, so when nothing is stored after the cursor nothing more will come.
        const progress = await this.read(() => this.options.runs.progress(runId), signal);
        const rows = await this.read(() => this.options.store.after(runId, inbox.cursor, EVENT_PAGE), signal);
        if (rows.length > 0) {
          const events = rows.map(LoggedEvent.stored);
          inbox.push(events);
          const batch = await inbox.take(signal);
          if (batch.length) yield batch;
          if (rows.length < EVENT_PAGE && (await this.endsAt(runId, events.at(-1)!))) return;
          continue;
        }
        // Not running, or running with no process to execute it (an orphan of a crash before leases): nothing more.
        if (!progress?.executing) return;
        if (this.legs.has(runId)) {
          // Executed here. Ids up to where the leg's memory begins that the store does not have were never used (a
          // leg taken over begins after the ids its predecessor reserved): the reader skips them and joins the leg.
          if (storedUpTo !== undefined && this.legs.get(runId) === leg)
            inbox.cursor = Math.max(inbox.cursor, storedUpTo);
          continue;
        }
        // Executed by another process (or about to be taken over): the events its store announces.
        const tail = this.tailOf(runId, inbox);
        detach = () => this.leaveTail(tail, inbox);
        void tail.fetch();
        while (!inbox.ended) {
          const batch = await inbox.take(signal);
          if (batch.length) {
            yield batch;
            const last = batch.at(-1)!;
            if (last.terminal && (await this.endsAt(runId, last))) return;
            continue;
          }
          // Woken with nothing: the run is no longer executed elsewhere (it ended or stopped, or it is executed here
          // now). The outer loop looks at where it stands, then at what is stored.
          break;
        }
        detach();
      }
    } finally {
      signal?.removeEventListener('abort', leave);
      detach();
    }
  }

  /**
   * Reads what a tail's readers have not had and hands it to them. When nothing came and no process executes the run
   * (it ended or waits at a gate, or is executed here now), each reader is woken to look at where it stands.
   */
  async readInto(tail: Tail): Promise<void> {
    try {
      const rows = await this.options.store.after(tail.runId, tail.cursor, EVENT_PAGE);
      if (rows.length > 0) {
        const events = rows.map(LoggedEvent.stored);
        tail.cursor = events.at(-1)!.id;
        for (const reader of tail.readers) reader.push(events);
        return;
      }
      const progress = await this.options.runs.progress(tail.runId);
      if (!progress?.executing || this.legs.has(tail.runId)) for (const reader of tail.readers) reader.poke();
    } catch (error) {
      this.options.log.warn(`following run ${tail.runId}: ${(error as Error).message}`);
    }
  }

  /** Reserves a run's event ids up to `upTo` for the leg `holder`, in its row. */
  reserve(runId: string, holder: LegHolder, upTo: number): Promise<void> {
    return this.options.runs.reserveSeq(runId, holder, upTo);
  }

  /** A reader's read of the store: it waits while the database is away rather than ending the reader's stream. */
  private read<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return retryTransient(work, {
      isTransient: this.options.isTransient,
      log: this.options.log,
      what: 'reading a run’s events',
      signal,
      giveUpAfterMs: this.options.waitMs,
    });
  }

  /** Whether a stored event ends a reader's stream: the run's end, or a gate the run still waits at. */
  private async endsAt(runId: string, event: LoggedEvent): Promise<boolean> {
    if (!event.terminal) return false;
    if (RUN_ENDING_EVENTS.includes(event.type)) return true;
    const progress = await this.read(() => this.options.runs.progress(runId));
    return !progress || waitsAt(progress, event.id);
  }

  /**
   * Whether a reader who has a run's events up to `cursor` has everything it will send until someone acts on it:
   * the run is not running (so its last event is stored), and nothing is stored after the cursor.
   */
  async nothingAfter(runId: string, cursor: number): Promise<boolean> {
    const progress = await this.options.runs.progress(runId);
    if (!progress || progress.executing) return false;
    return (await this.options.store.after(runId, cursor, 1)).length === 0;
  }

  private tailOf(runId: string, reader: Inbox): Tail {
    let tail = this.tails.get(runId);
    if (!tail) {
      tail = new Tail(runId, reader.cursor, this, this.options.pollMs);
      this.tails.set(runId, tail);
    }
    // A reader behind the tail's cursor has the tail read again from its place (the others skip what they have).
    tail.cursor = Math.min(tail.cursor, reader.cursor);
    tail.readers.add(reader);
    return tail;
  }

  private leaveTail(tail: Tail, reader: Inbox): void {
    tail.readers.delete(reader);
    if (tail.readers.size === 0 && this.tails.get(tail.runId) === tail) {
      tail.stop();
      this.tails.delete(tail.runId);
    }
  }
}

/**
 * Whether a gate_waiting stored under `seq` is where the run still waits: it waits at a gate, and that stop is its
 * last (its status and that event were stored in one statement).
 */
function waitsAt(progress: RunProgress | undefined, seq: number): boolean {
  return progress?.status === 'waiting_approval' && progress.eventSeq <= seq;
}

/**
 * The one publisher of a run's events while this process executes a leg of it: numbers them (reserving ids ahead
 * in the run's row), hands them to the readers here, and stores them. The leg's last event goes to the store with
 * the run's row instead (`final()`), in the statement that ends the leg.
 */
export class LegPublisher {
  private seq: number;
  private reserving = false;

  constructor(
    private readonly leg: Leg,
    private readonly log: EventLog,
    private reserved: number,
  ) {
    this.seq = leg.before;
  }

  get runId(): string {
    return this.leg.runId;
  }

  /** The id of the last event published. */
  get lastId(): number {
    return this.seq;
  }

  emit(event: RunEvent): LoggedEvent {
    const logged = LoggedEvent.of(this.next(), event);
    this.log.publish(this.leg, logged);
    return logged;
  }

  /**
   * An event numbered now and handed to the readers once `ready` has written what it names (a tool server's question,
   * whose stop id is the event's): a reader who acts on it finds the record. The leg emits nothing meanwhile: the one
   * thing under way is the call that waits on this.
   */
  async emitAfter(event: RunEvent, ready: (id: number) => Promise<void>): Promise<LoggedEvent> {
    const logged = LoggedEvent.of(this.next(), event);
    await ready(logged.id);
    this.log.publish(this.leg, logged);
    return logged;
  }

  /**
   * The leg's last event: numbered now, stored by `store` (the statement that ends the leg, after every event before
   * it is stored), and handed to the readers only once it is: a reader who reacts to it finds the run's row up to
   * date. Returns whether `store` accepted it (false: the run was no longer this leg's).
   */
  async final(event: RunEvent, store: (row: NewEvent) => Promise<boolean>): Promise<boolean> {
    const logged = LoggedEvent.of(this.next(), event);
    await this.log.flushWithin();
    const accepted = await store({ runId: this.leg.runId, seq: logged.id, type: logged.type, data: logged.data });
    if (accepted) this.log.publish(this.leg, logged, false);
    return accepted;
  }

  /** Hands the leg's readers an event that could not be stored (the run's end, with the database away). */
  live(event: RunEvent): void {
    this.log.publish(this.leg, LoggedEvent.of(this.next(), event), false);
  }

  /**
   * Hands the leg's readers an event another process stored for the run (the run_cancelled a cancel stored with the
   * run's status): they end with the run as every reader of its store does.
   */
  relay(event: StoredEvent): void {
    this.log.publish(this.leg, LoggedEvent.stored(event), false);
  }

  /** The leg is over, with its final event or without (lost, or shut down). */
  close(): void {
    this.log.closeLeg(this.leg);
  }

  private next(): number {
    this.seq++;
    if (this.seq > this.reserved - SEQ_BLOCK / 2) this.reserveMore();
    return this.seq;
  }

  private reserveMore(): void {
    if (this.reserving) return;
    this.reserving = true;
    const upTo = this.reserved + SEQ_BLOCK;
    this.log
      .reserve(this.leg.runId, this.leg.holder, upTo)
      .then(() => {
        this.reserved = upTo;
      })
      .catch(() => undefined)
      .finally(() => {
        this.reserving = false;
      });
  }
}
