import { randomUUID } from 'node:crypto';
import type { QueueStatus } from '../contracts/models';
import type { LlmQueueRepository, TicketState } from '../db/llm-queue.repository';
import { getLogger } from '../log';
import type { QueueInfo } from './model-client';
import { estimateWaits } from './queue-estimate';

const log = getLogger('svc.models');

/** Named so that `${name}: ${message}` is the documented queue timeout text. */
export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** Until some call has finished, a call is assumed to hold its slot this long (a local model on a laptop). */
const ASSUMED_CALL_S = 20;

/** Waiters look at the queue this often even when no change was announced (a notification may be lost). */
const POLL_MS = 1000;

/** Positions are read at most this often: with hundreds waiting, every slot handed over would read them all. */
const POSITIONS_MS = 250;
/** A waiter's estimate is told again at most this often, when it has drifted from what was said. */
const REANNOUNCE_MS = 2000;
/** Tries at giving a slot back, half a second, then one, two… apart: about half a minute in all. */
const RELEASE_ATTEMPTS = 6;
/**
 * A slot a run's call is done with is kept this long for the run's next call, while nobody waits: a run's calls come
 * one after the other a few milliseconds apart, and taking the slot again then costs no round trip to the database.
 */
const KEEP_MS = 100;
/**
 * The queue's notice is sent only while someone waits (svc_llm_enqueue). After one, slots are given back at once, and
 * none is kept, for this long: under contention a notice comes with every slot handed over.
 */
const CONTENDED_MS = 1000;

export interface LocalQueueOptions {
  slots: number;
  timeoutS: number;
  /** This process, as the owner of its tickets. */
  owner: string;
  /** A ticket lapses unless renewed within this time: the slot of a process that died comes back by itself. */
  leaseS: number;
  runtime?: string;
}

/** A slot kept for a run's next call, and what it served so far (the queue's counters count every call). */
interface KeptSlot {
  ticket: number;
  tenant: string;
  served: Served;
  timer: NodeJS.Timeout;
}

interface Served {
  calls: number;
  seconds: number;
}

/** A slot reserved for a run's first call has served nothing: given back unused, it counts for nothing. */
const UNUSED: Served = { calls: 0, seconds: 0 };

interface Waiter {
  ticket: number;
  position: number;
  /** The estimated wait last announced, and when: the banner is told again once it has drifted. */
  announced?: { waitS: number; at: number };
  onQueued?: (info: QueueInfo) => void;
  /** Seconds the runtime will spend loading the call's model once it has its slot (a cold start). */
  loadS: number;
  grant(): void;
  lost(): void;
}

function seconds(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(3)));
}

/**
 * At most `slots` local-runtime calls in flight across every server process on the database: the queue
 * lives in PostgreSQL (a ticket per call), slots go round robin across tenants and first come first served
 * within one, and a process that dies gives its slots back when its tickets' lease lapses. Waiters in this
 * process learn of changes by NOTIFY (`changed()`), with a slow poll as a safety net. A waiter leaves at
 * once when its run is cancelled, and with the documented TimeoutError after `timeoutS`.
 *
 * While nobody waits, a run's call that is done keeps its slot for KEEP_MS, and the run's next call takes it on
 * without asking the database: two statements fewer per call. The first notice that someone waits gives every kept
 * slot back at once, so a waiter is held up by a notice's delivery at most.
 */
export class LocalQueue {
  readonly slots: number;
  private readonly runtime: string;
  private readonly waiters = new Map<number, Waiter>();
  /** Tickets holding a slot for a call of this process: with the waiters', the only ones it keeps alive. */
  private readonly held = new Set<number>();
  /** Slots kept for the next call of the run (the holder) whose last call held them, or reserved for its first. */
  private readonly kept = new Map<string, KeptSlot>();
  /** Reservations on their way to the database, by holder: the holder's call waits for its own. */
  private readonly reserving = new Map<string, Promise<void>>();
  private closed = false;
  /** When a notice last said that someone waits. */
  private contendedAt = -Infinity;
  private refreshing?: Promise<void>;
  private again = false;
  private lastRefresh = 0;
  private refreshTimer?: NodeJS.Timeout;
  private readonly renewTimer: NodeJS.Timeout;
  private readonly pollTimer: NodeJS.Timeout;

  constructor(
    private readonly tickets: LlmQueueRepository,
    private readonly options: LocalQueueOptions,
  ) {
    this.slots = options.slots;
    this.runtime = options.runtime ?? 'local runtime';
    this.renewTimer = setInterval(
      () => {
        const live = [...this.waiters.keys(), ...this.held];
        if (live.length === 0) return;
        tickets.renew(options.owner, options.leaseS, live).catch((error: Error) => {
          log.warn(`renewing queue tickets failed: ${error.message}`);
        });
      },
      (options.leaseS * 1000) / 4,
    );
    this.renewTimer.unref();
    // Slots held by a process that died come back only when someone grants after its tickets lapsed.
    this.pollTimer = setInterval(() => {
      if (this.waiters.size === 0) return;
      tickets.grant(this.slots).then(
        () => this.changed(),
        (error: Error) => log.warn(`granting queue slots failed: ${error.message}`),
      );
    }, POLL_MS);
    this.pollTimer.unref();
  }

  /** Resolves with the function that frees the slot; rejects on timeout or abort. */
  async acquire(
    options: {
      signal?: AbortSignal;
      onQueued?: (info: QueueInfo) => void;
      label?: string;
      tenant?: string;
      /** The call's model must be loaded first: its estimated wait counts these seconds too. */
      loadS?: number;
      /** The run making the call: its next call may take on the slot this one leaves, while nobody waits. */
      holder?: string;
    } = {},
  ): Promise<() => Promise<void>> {
    options.signal?.throwIfAborted();
    if (options.holder !== undefined) await this.reserving.get(options.holder);
    const tenant = options.tenant ?? '';
    const keepFor = options.holder === undefined ? undefined : { holder: options.holder, tenant };
    const kept = options.holder === undefined ? undefined : this.kept.get(options.holder);
    if (kept) {
      this.kept.delete(options.holder!);
      clearTimeout(kept.timer);
      if (kept.tenant === tenant && !this.contended()) return this.releaser(kept.ticket, keepFor, kept.served);
      // Given back before this call queues, so that it never waits behind its own run's last one.
      await this.giveBack(kept.ticket, kept.served);
    }
    const label = options.label ?? 'a call';
    const queuedAt = performance.now();
    const { ticket, granted } = await this.tickets.enqueue({
      key: randomUUID(),
      owner: this.options.owner,
      tenant,
      label,
      leaseS: this.options.leaseS,
      slots: this.slots,
    });
    if (granted) return this.releaser(ticket, keepFor);
    if (log.enabled('DEBUG')) log.debug(`queue: ${label} waits (ticket ${ticket})`);

    return new Promise((resolve, reject) => {
      const leave = (outcome: { timedOut?: boolean }) => {
        this.waiters.delete(ticket);
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        return this.tickets.release(ticket, this.slots, outcome);
      };
      const onAbort = () => {
        void leave({}).catch(() => undefined);
        reject(options.signal!.reason);
      };
      const timer = setTimeout(async () => {
        try {
          const { waiting, active } = await leave({ timedOut: true });
          reject(
            new TimeoutError(
              `${this.runtime} queue timeout after ${seconds(this.options.timeoutS)}s ` +
                `(${waiting} still waiting, ${active} active)`,
            ),
          );
        } catch (error) {
          reject(error);
        }
      }, this.options.timeoutS * 1000);
      const waiter: Waiter = {
        ticket,
        position: 0,
        onQueued: options.onQueued,
        loadS: options.loadS ?? 0,
        grant: () => {
          if (log.enabled('DEBUG')) {
            log.debug(`queue: ${label} got a slot after ${Math.round(performance.now() - queuedAt)} ms`);
          }
          this.waiters.delete(ticket);
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          resolve(this.releaser(ticket, keepFor));
        },
        lost: () => {
          this.waiters.delete(ticket);
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          // The ticket lapsed (this process stalled past its lease): queue again, at the back.
          this.acquire(options).then(resolve, reject);
        },
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(ticket, waiter);
      this.changed();
    });
  }

  /**
   * The queue changed somewhere in the cluster. Tickets announced as granted start at once; where the others
   * stand is read soon after (at most every POSITIONS_MS), so that handing over a slot stays cheap however many
   * wait.
   */
  changed(granted: readonly number[] = []): void {
    this.contendedAt = performance.now();
    void this.giveBackKept();
    for (const ticket of granted) this.waiters.get(ticket)?.grant();
    if (this.waiters.size === 0 || this.refreshTimer) return;
    const wait = Math.max(0, this.lastRefresh + POSITIONS_MS - Date.now());
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      this.refreshNow();
    }, wait);
  }

  private refreshNow(): void {
    if (this.waiters.size === 0) return;
    if (this.refreshing) {
      this.again = true;
      return;
    }
    this.lastRefresh = Date.now();
    this.refreshing = this.refresh().finally(() => {
      this.refreshing = undefined;
      if (this.again) {
        this.again = false;
        this.changed();
      }
    });
  }

  async status(): Promise<QueueStatus> {
    const counts = await this.tickets.counts();
    return {
      runtime: this.runtime,
      slots: this.slots,
      active: counts.active,
      waiting: counts.waiting,
      served: counts.served,
      timed_out: counts.timed_out,
      average_call_s: average(counts.recent_s),
    };
  }

  /**
   * Forgets the slots held across the cluster (a slot kept by a call that hangs, say) and the counters;
   * waiters keep their place and get the freed slots. Calls still running finish, but no longer count.
   */
  async reset(reason: string): Promise<QueueStatus> {
    log.warn(`queue reset (${reason || 'no reason given'}): was ${JSON.stringify(await this.status())}`);
    // The kept slots are forgotten with the rest: a run's next call queues again.
    for (const kept of this.kept.values()) clearTimeout(kept.timer);
    this.kept.clear();
    await this.tickets.reset(this.slots);
    return this.status();
  }

  /** Stops this process's part of the queue, giving back its tickets (its calls have ended by then). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.reserving.values());
    for (const kept of this.kept.values()) clearTimeout(kept.timer);
    this.kept.clear();
    clearInterval(this.renewTimer);
    clearInterval(this.pollTimer);
    clearTimeout(this.refreshTimer);
    await this.tickets.dropOwner(this.options.owner, this.slots).catch((error: Error) => {
      log.warn(`giving back queue tickets failed (they lapse by themselves): ${error.message}`);
    });
  }

  /**
   * The function a call gives its slot up with. While nobody waits, a call of a run keeps the slot for the run's next
   * call (KEEP_MS) and resolves at once; otherwise it gives the slot back, resolving once the queue has it (or its
   * first try failed: the others go on in the background). A run awaits it before its next call, so that call never
   * queues behind its own last one.
   */
  private releaser(
    ticket: number,
    keepFor?: { holder: string; tenant: string },
    before: Served = { calls: 0, seconds: 0 },
  ): () => Promise<void> {
    const started = performance.now();
    let released = false;
    this.held.add(ticket);
    return () => {
      if (released) return Promise.resolve();
      released = true;
      const served = { calls: before.calls + 1, seconds: before.seconds + (performance.now() - started) / 1000 };
      if (!keepFor || this.contended()) return this.giveBack(ticket, served);
      this.keep(keepFor.holder, ticket, keepFor.tenant, served);
      return Promise.resolve();
    };
  }

  /** Keeps a held slot for `holder`'s next call, for KEEP_MS. */
  private keep(holder: string, ticket: number, tenant: string, served: Served): void {
    const timer = setTimeout(() => void this.giveBackKept(holder), KEEP_MS);
    timer.unref();
    this.kept.set(holder, { ticket, tenant, served, timer });
  }

  /**
   * A run's leg begins and will call the local runtime: while nobody waits, a slot is taken for its first call now,
   * while the leg starts its graph, and kept for that call as a call's slot is kept for the
   * next (KEEP_MS, given back at once if someone comes to wait). The first token then does not wait for the
   * ticket's round trip. A reservation that finds no free slot, or fails, is dropped: the call queues as any does.
   */
  reserve(holder: string, tenant: string): void {
    if (this.closed || this.contended() || this.kept.has(holder) || this.reserving.has(holder)) return;
    const reservation = this.tickets
      .enqueue({
        key: randomUUID(),
        owner: this.options.owner,
        tenant,
        label: `a reservation for ${holder}`,
        leaseS: this.options.leaseS,
        slots: this.slots,
      })
      .then(
        async ({ ticket, granted }) => {
          this.held.add(ticket);
          if (!granted || this.closed || this.contended() || this.kept.has(holder)) {
            await this.giveBack(ticket, UNUSED);
            return;
          }
          this.keep(holder, ticket, tenant, UNUSED);
        },
        (error: Error) => log.warn(`reserving a queue slot failed (the call queues as usual): ${error.message}`),
      )
      .finally(() => this.reserving.delete(holder));
    this.reserving.set(holder, reservation);
  }

  /** Whether someone waited a moment ago: then no slot is kept. */
  private contended(): boolean {
    return performance.now() - this.contendedAt < CONTENDED_MS;
  }

  /**
   * A run stops running here (at a gate, at its end, on a failure): the slot kept for its next call is given back,
   * resolving once the queue has it. The engine awaits it before the stop is announced, so that a process that dies
   * after announcing it holds no slot that a run resumed elsewhere would wait for until its lease lapsed.
   */
  async letGo(holder: string): Promise<void> {
    await this.reserving.get(holder);
    return this.giveBackKept(holder);
  }

  /** Gives back the slot kept for `holder`, or every kept slot. */
  private async giveBackKept(holder?: string): Promise<void> {
    const releases: Promise<void>[] = [];
    for (const [key, kept] of this.kept) {
      if (holder !== undefined && key !== holder) continue;
      this.kept.delete(key);
      clearTimeout(kept.timer);
      releases.push(this.giveBack(kept.ticket, kept.served));
    }
    await Promise.all(releases);
  }

  /** Gives a slot back to the queue, with what it served; a release that failed is tried again. */
  private giveBack(ticket: number, served: Served): Promise<void> {
    // No longer renewed: should its release be lost, the ticket lapses with its lease and its slot comes back.
    this.held.delete(ticket);
    // A slot not given back is held until its lease lapses, and the whole cluster's queue waits behind it. So a
    // release that failed (the database restarting) is tried again.
    const release = (attempt: number): Promise<void> =>
      this.tickets
        .release(ticket, this.slots, served.calls ? { servedS: served.seconds, calls: served.calls } : {})
        .then(
          () => undefined,
          (error: Error) => {
            if (attempt >= RELEASE_ATTEMPTS) {
              log.error(
                `releasing a queue slot failed ${attempt} times, giving up (it comes back when its lease lapses): ${error.message}`,
              );
              return;
            }
            log.warn(`releasing a queue slot failed, trying again: ${error.message}`);
            setTimeout(() => void release(attempt + 1), 500 * 2 ** attempt).unref();
          },
        );
    return release(1);
  }

  private async refresh(): Promise<void> {
    const asked = [...this.waiters.keys()];
    let states: TicketState[];
    try {
      states = await this.tickets.states(asked);
    } catch (error) {
      log.warn(`reading the queue failed: ${(error as Error).message}`);
      return;
    }
    const found = new Map(states.map((s) => [s.ticket, s]));
    const sample = states[0];
    const furthest = Math.max(0, ...states.map((s) => s.position ?? 0));
    const waits = sample ? estimateWaits(furthest, this.slots, sample.held_s, sample.average_s ?? ASSUMED_CALL_S) : [];
    const now = Date.now();
    // Only the waiters asked about: one that joined during the query is not in the answer yet.
    for (const ticket of asked) {
      const waiter = this.waiters.get(ticket);
      if (!waiter) continue;
      const state = found.get(ticket);
      if (!state) waiter.lost();
      else if (state.granted) waiter.grant();
      else if (state.position !== null) {
        const waitS = Number(((waits[state.position - 1] ?? 0) + waiter.loadS).toFixed(1));
        if (state.position === waiter.position && !drifted(waiter.announced, waitS, now)) continue;
        waiter.position = state.position;
        waiter.announced = { waitS, at: now };
        waiter.onQueued?.({
          position: state.position,
          waiting: state.waiting,
          active: state.active,
          estimated_wait_s: waitS,
        });
      }
    }
  }
}

/**
 * Whether a waiter whose place did not change should hear its estimate again: the calls ahead ran longer than
 * thought, or the time it announced has passed. Not more than every few seconds, and not for a second's drift.
 */
function drifted(announced: Waiter['announced'], waitS: number, now: number): boolean {
  if (!announced || now - announced.at < REANNOUNCE_MS) return false;
  const expected = Math.max(0, announced.waitS - (now - announced.at) / 1000);
  return Math.abs(waitS - expected) >= Math.max(1, expected * 0.2);
}

function average(values: number[]): number | null {
  if (values.length === 0) return null;
  return Number((values.reduce((a, b) => a + b, 0) / values.length).toFixed(3));
}
