import type { RoutingRule } from '../contracts/assets';
import { formatSseEvent, TERMINAL_EVENTS, type RunEvent } from '../contracts/events';
import type { NodeStatus, PendingGate } from '../contracts/runs';
import type { RunsRepository } from '../db/runs.repository';
import { getLogger } from '../log';
import type { GateDecision, NodeHooks } from './graph-builder';
import type { QueueInfo, TrimReport } from '../models/model-client';

const log = getLogger('svc.sse');

/** Token text reaches the database at most this often per node: a crash loses at most this much. */
const OUTPUT_FLUSH_MS = 500;

/** An event with its per-run sequence number and its wire form, serialised at most once. */
export class LoggedEvent {
  private cached?: string;
  constructor(
    readonly id: number,
    readonly event: RunEvent,
  ) {}
  get frame(): string {
    return (this.cached ??= formatSseEvent(this.id, this.event));
  }
}

export interface Subscriber {
  event(entry: LoggedEvent): void;
  /** The stream is over: the run finished or stopped at a gate. */
  end(): void;
}

/**
 * One live execution of a run in this process: the ordered event log that any number of clients
 * can follow (from the start or after a Last-Event-ID), and the writes that keep the database in
 * step with it. The graph reports through `hooks`.
 */
export class RunSession {
  private readonly log: LoggedEvent[] = [];
  private readonly subscribers = new Set<Subscriber>();
  private writes: Promise<unknown> = Promise.resolve();
  private readonly openRows = new Map<string, number>();
  private readonly pendingOutput = new Map<string, string>();
  private readonly dirty = new Set<string>();
  private flushTimer?: NodeJS.Timeout;
  private resumeGate?: string;
  private ended = false;
  readonly controller = new AbortController();
  /** Why the run was stopped from outside, when it was. */
  stopReason?: 'cancelled' | 'timeout' | 'shutdown';

  constructor(
    readonly runId: string,
    readonly threadId: string,
    readonly agent: string,
    readonly model: string,
    private seq: number,
    private readonly runs: RunsRepository,
  ) {}

  get lastEventId(): number {
    return this.seq;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Starts a new leg of the run (a resume after a gate decision) on the same event sequence. */
  reopen(resumeGate: string): void {
    this.ended = false;
    this.resumeGate = resumeGate;
  }

  emit(event: RunEvent): void {
    const entry = new LoggedEvent(++this.seq, event);
    this.log.push(entry);
    for (const subscriber of this.subscribers) subscriber.event(entry);
    if (TERMINAL_EVENTS.includes(event.type)) {
      this.ended = true;
      for (const subscriber of this.subscribers) subscriber.end();
      this.subscribers.clear();
    }
  }

  /** Replays what the client has not seen yet, then follows live. Returns the unsubscribe function. */
  subscribe(afterId: number, subscriber: Subscriber): () => void {
    for (const entry of this.log) if (entry.id > afterId) subscriber.event(entry);
    if (this.ended) {
      subscriber.end();
      return () => undefined;
    }
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
  }

  /** Database writes run one after another in emit order, without holding up the token stream. */
  persist(write: () => Promise<unknown>): Promise<void> {
    const next = this.writes.then(write).catch((error) => log.error(`run ${this.runId}: database write failed`, error));
    this.writes = next;
    return next.then(() => undefined);
  }

  async drain(): Promise<void> {
    this.flushOutputs();
    clearInterval(this.flushTimer);
    this.flushTimer = undefined;
    await this.writes;
  }

  private flushOutputs(): void {
    for (const node of this.dirty) {
      const output = this.pendingOutput.get(node) ?? '';
      void this.persist(async () => {
        const row = this.openRows.get(node);
        if (row !== undefined) await this.runs.saveNodeOutput(row, output);
      });
    }
    this.dirty.clear();
  }

  /** The open node rows, closed with `status` (used when the run fails or is cancelled). */
  closeOpenNodes(status: NodeStatus): Promise<void> {
    return this.persist(async () => {
      const rows = [...this.openRows.entries()];
      this.openRows.clear();
      for (const [node, row] of rows)
        await this.runs.setNodeStatus(row, status, this.pendingOutput.get(node) ?? null, true);
    });
  }

  /** The gate row stays open while it waits; it is closed by the decision. */
  pauseAtGate(gate: PendingGate): Promise<void> {
    return this.persist(async () => {
      const row = this.openRows.get(gate.node);
      this.openRows.delete(gate.node);
      if (row !== undefined) await this.runs.setNodeStatus(row, 'waiting_approval', null, false);
    });
  }

  readonly hooks: NodeHooks = {
    signal: this.controller.signal,

    enter: async (node) => {
      this.emit({ type: 'node_enter', node });
      this.pendingOutput.set(node, '');
      // Not awaited: the model call starts at once; later writes for this node queue behind the insert.
      void this.persist(async () => this.openRows.set(node, await this.runs.enterNode(this.runId, node, 'running')));
      this.flushTimer ??= setInterval(() => this.flushOutputs(), OUTPUT_FLUSH_MS);
    },

    token: (node, text) => {
      this.pendingOutput.set(node, (this.pendingOutput.get(node) ?? '') + text);
      this.dirty.add(node);
      this.emit({ type: 'token', node, text });
    },

    exit: async (node, status, output) => {
      this.dirty.delete(node);
      this.emit({ type: 'node_exit', node, status });
      await this.persist(async () => {
        const row = this.openRows.get(node);
        this.openRows.delete(node);
        if (row !== undefined) await this.runs.setNodeStatus(row, status, output, true);
      });
    },

    queued: (node: string, info: QueueInfo) => this.emit({ type: 'queue', node, ...info }),

    trimmed: (node: string, report: TrimReport) => this.emit({ type: 'context_trimmed', node, ...report }),

    routeMatched: async (from: string, to: string, rule: RoutingRule) => {
      this.emit({ type: 'route_matched', from, to, rule });
      await this.persist(() => this.runs.addRoute(this.runId, { from, to, rule, at: Date.now() / 1000 }));
    },

    takeResume: (gate) => {
      if (this.resumeGate !== gate) return false;
      this.resumeGate = undefined;
      return true;
    },

    gateDecided: async (gate: string, decision: GateDecision) => {
      this.emit({ type: decision.approved ? 'gate_approved' : 'gate_rejected', node: gate, reason: decision.reason });
      await this.persist(async () => {
        const row = await this.runs.openNodeRow(this.runId, gate);
        if (row !== undefined)
          await this.runs.setNodeStatus(row, decision.approved ? 'approved' : 'rejected', null, true);
      });
    },
  };
}
