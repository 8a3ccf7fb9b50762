import { formatSseFrame, TERMINAL_EVENTS, type RunEvent, type RunEventType } from '../contracts/events';
import { EVENT_PAGE, type NewEvent, type RunEventsRepository, type StoredEvent } from '../db/run-events.repository';
import { getLogger } from '../log';

const log = getLogger('svc.sse');

/** How long a run's final event may take to be stored after its row says it ended (one flush, one round trip). */
const FINAL_EVENT_GRACE_MS = 250;

/**
 * A run that ended this long ago without a final event in the store will not get one (it was closed by the orphan
 * sweep, or its events were pruned): a re-attach to it is told there is nothing more.
 */
const FINAL_EVENT_SETTLED_MS = 5000;

const RUN_ENDING_EVENTS: readonly string[] = TERMINAL_EVENTS.filter((type) => type !== 'gate_waiting');

/** An event with its per-run id, serialised once however many clients follow it. */
export class LoggedEvent {
  private cached?: string;
  constructor(
    readonly id: number,
    readonly type: RunEventType,
    /** The JSON text of the event, exactly as clients receive it and as it is stored. */
    readonly data: string,
  ) {}

  static of(id: number, event: RunEvent): LoggedEvent {
    return new LoggedEvent(id, event.type, JSON.stringify(event));
  }

  static stored(row: StoredEvent): LoggedEvent {
    return new LoggedEvent(row.seq, row.type as RunEventType, row.data);
  }

  get frame(): string {
    return (this.cached ??= formatSseFrame(this.id, this.type, this.data));
  }

  get terminal(): boolean {
    return TERMINAL_EVENTS.includes(this.type);
  }
}

export interface Subscriber {
  event(entry: LoggedEvent): void;
  /** The stream is over: the run finished or stopped at a gate. */
  end(): void;
  /** Resolves when the subscriber can take more: catching up on stored events goes at the client's pace. */
  room?(): Promise<void>;
}

export interface EventStreamOptions {
  /** How long appended events wait before they are stored together in one INSERT. */
  flushMs: number;
  /** How often a follower of a run executed elsewhere looks for new events when no notification came. */
  pollMs: number;
  /**
   * Whether some process executes the run, or will (a lapsed lease is taken over): a follower of a quiet run
   * stops once none does — the run ended, or it is an orphan no lease covers.
   */
  isExecuted(runId: string): Promise<boolean>;
}

/** The events of one leg of a run that this process executes: kept in memory while it runs. */
class LiveLog {
  readonly events: LoggedEvent[] = [];
  readonly subscribers = new Set<{ deliver(entry: LoggedEvent): void; reattach(): void }>();
  ended = false;
  constructor(
    readonly runId: string,
    readonly firstSeq: number,
  ) {}
}

interface Follower {
  lastSeen(): number;
  /** `more`: later events are known, so a gate_waiting among them is a pause the run went past. */
  deliver(entry: LoggedEvent, more: boolean): void;
  finish(): void;
}

/** Followers, in this process, of a run that another process executes: one reader of the store for all of them. */
class RemoteTail {
  readonly followers = new Set<Follower>();
  private fetching = false;
  private again = false;
  /** A poll found nothing new while no process executes the run. */
  private quietSinceEnd = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly runId: string,
    public cursor: number,
    private readonly events: RunEventsRepository,
    private readonly options: EventStreamOptions,
  ) {
    this.timer = setInterval(() => void this.fetch(true), options.pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async fetch(poll = false): Promise<void> {
    if (this.fetching) {
      this.again = true;
      return;
    }
    this.fetching = true;
    try {
      let found = false;
      do {
        this.again = false;
        const rows = await this.events.after(this.runId, this.cursor);
        for (const [index, row] of rows.entries()) {
          const entry = LoggedEvent.stored(row);
          this.cursor = entry.id;
          const more = index < rows.length - 1;
          for (const follower of this.followers) follower.deliver(entry, more);
        }
        found ||= rows.length > 0;
        if (rows.length === EVENT_PAGE) this.again = true;
      } while (this.again && this.followers.size > 0);
      if (found || !poll) {
        this.quietSinceEnd = false;
      } else if (!(await this.options.isExecuted(this.runId))) {
        // The run's row says it ended; its final event is stored just after that. Give it one more poll,
        // then nothing more will come (its events were pruned, or it was closed by the orphan sweep).
        if (this.quietSinceEnd) for (const follower of [...this.followers]) follower.finish();
        this.quietSinceEnd = true;
      }
    } catch (error) {
      log.warn(`following run ${this.runId}: ${(error as Error).message}`);
    } finally {
      this.fetching = false;
    }
  }
}

/**
 * A run's event stream, whichever process executes it. The executing process appends events: they reach
 * its own followers at once, from memory, and are stored in PostgreSQL in batches off the token path (one
 * multi-row INSERT per flush, never a round trip per token). Followers anywhere read what is stored after
 * their Last-Event-ID, then follow new events as the store announces them (LISTEN/NOTIFY, with a slow poll
 * as a safety net). Finished runs are not kept in memory: the store replays exactly what was sent live.
 */
export class RunEventStream {
  private readonly live = new Map<string, LiveLog>();
  private readonly tails = new Map<string, RemoteTail>();
  private pending: NewEvent[] = [];
  private flushTimer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  private failures = 0;
  private closed = false;

  constructor(
    private readonly events: RunEventsRepository,
    private readonly options: EventStreamOptions,
  ) {}

  /** Starts this process's log of a run; its next event gets id `lastSeq + 1`. */
  open(runId: string, lastSeq: number): void {
    this.live.set(runId, new LiveLog(runId, lastSeq + 1));
  }

  /** Appends an event to a run opened here, under the next id; returns that id. */
  append(runId: string, seq: number, event: RunEvent): LoggedEvent {
    const entry = LoggedEvent.of(seq, event);
    const live = this.live.get(runId);
    if (live && !live.ended) {
      live.events.push(entry);
      for (const subscriber of live.subscribers) subscriber.deliver(entry);
      if (entry.terminal) this.endLive(live);
    }
    this.pending.push({ runId, seq, type: entry.type, data: entry.data });
    if (entry.terminal) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), this.options.flushMs);
    return entry;
  }

  /** Stores everything appended so far; resolves once it is in the database (retrying while it is down). */
  async flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    while (this.flushing) await this.flushing;
    while (this.pending.length > 0 && !this.closed) {
      const batch = this.pending;
      this.pending = [];
      this.flushing = this.events.append(batch).then(
        () => {
          this.failures = 0;
        },
        async (error: unknown) => {
          this.pending = batch.concat(this.pending);
          this.failures++;
          if (this.failures === 1 || this.failures % 20 === 0) {
            log.error(`storing ${batch.length} run event(s) failed; retrying`, error);
          }
          await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * this.failures)));
        },
      );
      await this.flushing;
      this.flushing = undefined;
    }
  }

  /** Follows a run after `afterId`: what is stored or in memory first, then new events, to the final one. */
  follow(runId: string, afterId: number, subscriber: Subscriber): () => void {
    let lastSeen = afterId;
    let closed = false;
    let detach = () => {};
    const finish = () => {
      if (closed) return;
      closed = true;
      detach();
      subscriber.end();
    };
    const deliver = (entry: LoggedEvent, more = false) => {
      if (closed) return;
      if (entry.id > lastSeen) {
        lastSeen = entry.id;
        subscriber.event(entry);
      }
      // A stream ends with the run, or at a gate the run waits at; a replay goes on past a gate decided since. It ends
      // so also for a client that says it has seen that far already (a Last-Event-ID at or past the run's end).
      if (entry.terminal && !(more && entry.type === 'gate_waiting')) finish();
    };

    /**
     * Hands a backlog to the client at its pace, so a slow reader is not given a whole log at once (and one that
     * stops reading is dropped, as a live one is). `moreAfterLast`: later events may follow the backlog's last one
     * (a gate_waiting there is then no end).
     */
    const paced = async (entries: readonly LoggedEvent[], moreAfterLast: boolean) => {
      for (let index = 0; index < entries.length && !closed; index++) {
        if (subscriber.room) await subscriber.room();
        if (!closed) deliver(entries[index]!, index < entries.length - 1 || moreAfterLast);
      }
    };

    let pausedAtGate = false;
    const attach = async () => {
      for (;;) {
        const live = this.live.get(runId);
        if (live && live.firstSeq <= lastSeen + 1) {
          if (!live.ended) {
            // The backlog at the client's pace, then the live events as they come.
            await paced(live.events, false);
            if (closed) return;
            if (live.ended) continue;
            const onLive = {
              deliver: (entry: LoggedEvent) => deliver(entry, false),
              // This process stopped executing the run without an end: follow it wherever it goes on.
              reattach: () => void attach().catch(fail),
            };
            live.subscribers.add(onLive);
            detach = () => live.subscribers.delete(onLive);
            return;
          }
          // This process's leg is over; a later one (resumed elsewhere) may be in the store.
          await paced(live.events, true);
          pausedAtGate = live.events.at(-1)?.type === 'gate_waiting';
          if (closed) return;
        }
        const rows = await this.events.after(runId, lastSeen);
        if (closed) return;
        // A gate_waiting that ends what is stored is where the stream ends only while the run still waits there:
        // a run resumed since (its next leg is live here, or some process executes it) is followed on.
        const last = rows.length < EVENT_PAGE ? rows.at(-1) : undefined;
        const resumed = last?.type === 'gate_waiting' && (await this.resumedAfter(runId, last.seq));
        if (closed) return;
        await paced(rows.map(LoggedEvent.stored), resumed);
        if (closed || rows.length === EVENT_PAGE) continue;
        if (rows.length > 0) pausedAtGate = rows.at(-1)!.type === 'gate_waiting' && !resumed;
        if (pausedAtGate) return finish();
        const liveNow = this.live.get(runId);
        if (liveNow && !liveNow.ended && liveNow.firstSeq <= lastSeen + 1) continue;
        // Nothing more will come to a run no process executes (an orphan, or one that ended without a last event).
        if (!liveNow && !(await this.options.isExecuted(runId))) {
          // It may have ended between the read above and the check: a run's row changes just before its
          // final event is stored, so that event is looked for once more after a moment.
          await new Promise((resolve) => setTimeout(resolve, FINAL_EVENT_GRACE_MS));
          if (closed) return;
          const last = await this.events.after(runId, lastSeen);
          for (const [index, row] of last.entries()) deliver(LoggedEvent.stored(row), index < last.length - 1);
          return finish();
        }
        if (closed) return;
        const follower: Follower = { lastSeen: () => lastSeen, deliver, finish };
        this.joinTail(runId, follower);
        detach = () => this.leaveTail(runId, follower);
        return;
      }
    };
    const fail = (error: unknown) => {
      log.warn(`following run ${runId} failed: ${(error as Error).message}`);
      finish();
    };
    attach().catch(fail);
    return () => {
      closed = true;
      detach();
    };
  }

  /** Whether the run went on after the gate_waiting stored under `gateSeq`: its next leg is here, or it executes. */
  private async resumedAfter(runId: string, gateSeq: number): Promise<boolean> {
    const live = this.live.get(runId);
    if (live && live.firstSeq > gateSeq) return true;
    return this.options.isExecuted(runId);
  }

  /** The id of the run's latest event, in memory here or stored (0 before its first). */
  async lastId(runId: string): Promise<number> {
    const stored = (await this.events.latest(runId))?.seq ?? 0;
    return Math.max(stored, this.live.get(runId)?.events.at(-1)?.id ?? 0);
  }

  /**
   * Whether a client that has seen the run's events up to `afterId` has nothing more to get: the run stopped at a
   * gate or ended, and its last event is at or before `afterId`. A re-attach then answers 204, which tells an
   * EventSource to stop reconnecting. Anything in doubt (the run is executing, or has just ended) is `false`: the
   * client is then followed as usual, and its stream ends with the run.
   */
  async nothingAfter(
    runId: string,
    afterId: number,
    run: { status: string; finishedAt: string | null },
  ): Promise<boolean> {
    if (run.status === 'running') return false;
    const live = this.live.get(runId);
    if (live && !live.ended) return false;
    const last = await this.events.latest(runId);
    if (last && last.seq > afterId) return false;
    // The event that ends what the run's status says: its pause at a gate, or its end.
    const waiting = run.status === 'waiting_approval';
    if (last && (waiting ? last.type === 'gate_waiting' : RUN_ENDING_EVENTS.includes(last.type))) return true;
    return !waiting && run.finishedAt !== null && Date.now() - Date.parse(run.finishedAt) > FINAL_EVENT_SETTLED_MS;
  }

  /**
   * This process stopped executing a run without a final event (it lost the run's lease, or shuts down):
   * what it appended is stored, and its followers here go on following the run from the store.
   */
  abandon(runId: string): void {
    const live = this.live.get(runId);
    if (!live || live.ended) return;
    this.live.delete(runId);
    live.ended = true;
    const followers = [...live.subscribers];
    live.subscribers.clear();
    void this.flush().then(() => {
      for (const follower of followers) follower.reattach();
    });
  }

  /** The store announced events of a run up to `seq` (from any process, this one included). */
  stored(runId: string, seq: number): void {
    const tail = this.tails.get(runId);
    if (tail && seq > tail.cursor) void tail.fetch();
  }

  /** After the notification connection was lost: whatever was announced meanwhile is fetched. */
  catchUp(): void {
    for (const tail of this.tails.values()) void tail.fetch();
  }

  /** Live legs of runs in this process, for tests and for status. */
  get liveRuns(): number {
    return [...this.live.values()].filter((l) => !l.ended).length;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    for (const tail of this.tails.values()) tail.stop();
    this.tails.clear();
  }

  private endLive(live: LiveLog): void {
    live.ended = true;
    live.subscribers.clear();
    // Its events are stored by then: later followers read them from the database.
    setTimeout(() => {
      if (this.live.get(live.runId) === live) this.live.delete(live.runId);
    }, 5000).unref();
  }

  private joinTail(runId: string, follower: Follower): void {
    let tail = this.tails.get(runId);
    if (!tail) {
      tail = new RemoteTail(runId, follower.lastSeen(), this.events, this.options);
      this.tails.set(runId, tail);
    }
    tail.cursor = Math.min(tail.cursor, follower.lastSeen());
    tail.followers.add(follower);
    void tail.fetch();
  }

  private leaveTail(runId: string, follower: Follower): void {
    const tail = this.tails.get(runId);
    if (!tail) return;
    tail.followers.delete(follower);
    if (tail.followers.size === 0) {
      tail.stop();
      this.tails.delete(runId);
    }
  }
}
