import { GATE_DECISION_EVENTS, type GateDecisionEvent } from '../../contracts/events';
import { RUN_TRANSITIONS, type RunTransitionName } from '../../contracts/run-transitions';
import type { GateDecision, NodeStatus, PendingGate, RouteMatch, RunStatus } from '../../contracts/runs';
import { ROLES, type Role } from '../../contracts/tenancy';
import type { PendingToolCall } from '../../contracts/tools';
import type { QuestionAction, ToolQuestionState } from '../../contracts/tool-questions';
import type {
  EventStore,
  Lease,
  LegEvent,
  LegHolder,
  NewEvent,
  NewRun,
  NewStopDecision,
  NewToolCall,
  NewToolQuestion,
  ModelTurnRecord,
  ModelCallRecord,
  ModelCallStore,
  ModelCallWrite,
  ToolCallRecord,
  ToolCallStore,
  ComparedRecordStore,
  ToolQuestionStore,
  NodeStore,
  NodeWrite,
  PauseAtGate,
  PendingResume,
  RunEnd,
  RunProgress,
  RunRecord,
  RunStore,
  RunWriteStore,
  RunWrites,
  StartOutcome,
  StopDecision,
  StopTx,
  StoredEvent,
} from '../types';

interface Row extends RunRecord {
  createdBy: string;
  localRuntime: boolean;
  ownerId: string | null;
  leaseUntil: number | null;
  startedAt: number;
  /** When it joined its thread's line (queued runs), for their order. */
  queuedAt: number | null;
  pendingGate: PendingGate | null;
  gateExpiresAt: number | null;
  gateCheckpointId: string | null;
  routes: RouteMatch[];
}

interface NodeRow {
  key: string;
  node: string;
  status: NodeStatus;
  output: string;
  enteredAt: number;
  exitedAt: number | null;
}

interface DecisionRow extends StopDecision {
  runId: string;
  waitSeq: number;
}

/** What the stores tell the processes using them, as PostgreSQL's NOTIFY does. */
export interface MemoryNotices {
  cancelled?(runId: string): void;
  runReady?(threadId: string): void;
  eventsStored?(runId: string, seq: number): void;
}

/**
 * The run engine's stores in memory (storage/types.ts): the twin of db/'s PostgreSQL implementations, held to the
 * same behaviour by one contract test (storage.contract.ts). Each method does its work in one step of the event
 * loop, as a PostgreSQL statement does in one transaction; a run's stop is locked for a decision as its row would be.
 * `now()` is the clock leases and deadlines are read on: a test moves it to let a lease lapse.
 */
export class MemoryStores {
  private readonly runs = new Map<string, Row>();
  private readonly threads = new Map<string, { projectId: string }>();
  private readonly events = new Map<string, StoredEvent[]>();
  private readonly nodes = new Map<string, NodeRow[]>();
  private readonly decisions: DecisionRow[] = [];
  private readonly turns = new Map<string, ModelTurnRecord>();
  private readonly calls = new Map<string, ToolCallRecord>();
  /** Each grant's granter's role on the thread's project, as it stands now. */
  private readonly grants = new Map<string, Role>();
  private readonly modelCallRows = new Map<string, ModelCallRecord>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly listeners = new Set<MemoryNotices>();
  /** The next write fails with this error (a database that went away), once. */
  failNextWrite?: Error;
  /** Every write fails with this error until it is cleared (a database away for a while). */
  away?: Error;

  constructor(readonly now: () => number = Date.now) {}

  /** A process listening for notices (LISTEN); returns how to stop. */
  listen(notices: MemoryNotices): () => void {
    this.listeners.add(notices);
    return () => this.listeners.delete(notices);
  }

  /** The stored events of a run, for tests. */
  storedEvents(runId: string): StoredEvent[] {
    return [...(this.events.get(runId) ?? [])];
  }

  /** The node rows of a run, for tests. */
  nodeRows(runId: string): readonly NodeRow[] {
    return this.nodes.get(runId) ?? [];
  }

  /** A run's row as it stands, for tests. */
  row(runId: string): Readonly<Row> | undefined {
    return this.runs.get(runId);
  }

  /** A tool call's record as it stands, for tests. */
  toolCall(id: string): Readonly<ToolCallRecord> | undefined {
    return this.calls.get(id);
  }

  /** A statement: a write fails when told to (`failNextWrite`), as one sent while the database restarts would. */
  private statement(kind: 'read' | 'write' = 'write'): void {
    if (kind === 'read') return;
    if (this.away) throw this.away;
    const error = this.failNextWrite;
    if (error) {
      this.failNextWrite = undefined;
      throw error;
    }
  }

  private guarded(row: Row | undefined, name: RunTransitionName): row is Row {
    return (
      row !== undefined && (RUN_TRANSITIONS[name].from as readonly RunStatus[] | null)?.includes(row.status) === true
    );
  }

  /** Whether an event's run is still its leg's: its attempt, and no other owner (RunWriteStore). */
  private heldBy({ runId, holder }: LegEvent): boolean {
    const row = this.runs.get(runId);
    return row?.attempts === holder.attempt && (row.ownerId === null || row.ownerId === holder.owner);
  }

  /** Whether a run is executed in the leg `holder`: its owner's, at its attempt (not an older leg of that owner's). */
  private runsIn(row: Row, holder: LegHolder): boolean {
    return row.ownerId === holder.owner && row.attempts === holder.attempt;
  }

  private storeEvents(events: readonly NewEvent[]): void {
    const stored = new Map<string, number>();
    for (const event of events) {
      const list = this.events.get(event.runId) ?? [];
      if (list.some((e) => e.seq === event.seq)) continue;
      list.push({ seq: event.seq, type: event.type, data: event.data });
      list.sort((a, b) => a.seq - b.seq);
      this.events.set(event.runId, list);
      stored.set(event.runId, Math.max(stored.get(event.runId) ?? 0, event.seq));
    }
    for (const [runId, seq] of stored) for (const l of this.listeners) l.eventsStored?.(runId, seq);
  }

  /** A thread's active run (running or waiting) and its queued runs, in their order. */
  private busy(threadId: string): { active: Row | undefined; queued: Row[] } {
    const rows = [...this.runs.values()].filter((r) => r.threadId === threadId);
    return {
      active: rows
        .filter((r) => r.status === 'running' || r.status === 'waiting_approval')
        .sort((a, b) => b.startedAt - a.startedAt)[0],
      queued: rows.filter((r) => r.status === 'queued').sort((a, b) => a.queuedAt! - b.queuedAt!),
    };
  }

  private insert(run: NewRun, lease: Lease, at: Pick<Row, 'status' | 'seqReserved' | 'eventSeq'>): void {
    const queued = at.status === 'queued';
    this.runs.set(run.id, {
      id: run.id,
      threadId: run.threadId,
      projectId: this.threads.get(run.threadId)?.projectId ?? '',
      agent: run.agent,
      model: run.model,
      message: run.message,
      projectPath: run.projectPath,
      ...at,
      attempts: 1,
      handovers: 0,
      forkedFrom: run.forkedFrom,
      resume: null,
      endReason: null,
      traceContext: run.traceContext,
      agentVersion: run.agentVersion,
      manifestHash: run.manifestHash,
      // The memory stores keep no threads: a publish step names its file after the run's message, as a new thread's is.
      threadName: null,
      comparisonOf: run.comparisonOf,
      experimentItem: run.experimentItem?.itemId ?? null,
      createdBy: run.createdBy,
      localRuntime: run.localRuntime,
      ownerId: queued ? null : lease.owner,
      leaseUntil: queued ? null : this.now() + lease.leaseS * 1000,
      startedAt: this.now(),
      // Two runs queued in one millisecond keep the order they came in.
      queuedAt: queued ? this.now() + this.runs.size / 1e6 : null,
      pendingGate: null,
      gateExpiresAt: null,
      gateCheckpointId: null,
      routes: [],
    });
  }

  private cancelRow(row: Row, reason: string | null): void {
    const seq = Math.max(row.seqReserved, row.eventSeq) + 1;
    Object.assign(row, {
      status: RUN_TRANSITIONS.cancel.to,
      pendingGate: null,
      ownerId: null,
      leaseUntil: null,
      resume: null,
      endReason: reason ?? row.endReason,
      eventSeq: seq,
    });
    this.closeNodes(row.id, 'cancelled');
    const data = JSON.stringify({ type: 'run_cancelled', run_id: row.id, reason: row.endReason });
    this.storeEvents([{ runId: row.id, seq, type: 'run_cancelled', data }]);
    for (const l of this.listeners) l.cancelled?.(row.id);
    this.ended(row);
  }

  /** A run of a thread ended: with runs queued behind it, the processes hear that the line may move (svc_run_ready). */
  private ended(row: Row): void {
    if (!this.busy(row.threadId).queued.length) return;
    for (const l of this.listeners) l.runReady?.(row.threadId);
  }

  private record(row: Row): RunRecord {
    return {
      id: row.id,
      threadId: row.threadId,
      projectId: row.projectId,
      agent: row.agent,
      model: row.model,
      message: row.message,
      projectPath: row.projectPath,
      status: row.status,
      attempts: row.attempts,
      handovers: row.handovers,
      seqReserved: row.seqReserved,
      eventSeq: row.eventSeq,
      forkedFrom: row.forkedFrom,
      resume: row.resume,
      endReason: row.endReason,
      traceContext: row.traceContext,
      agentVersion: row.agentVersion,
      manifestHash: row.manifestHash,
      threadName: row.threadName,
      comparisonOf: row.comparisonOf,
      experimentItem: row.experimentItem,
    };
  }

  private async locked<T>(runId: string, work: () => Promise<T>): Promise<T> {
    const before = this.locks.get(runId) ?? Promise.resolve();
    const next = before.then(work, work);
    this.locks.set(
      runId,
      next.catch(() => undefined),
    );
    return next;
  }

  private stopTx(row: Row): StopTx {
    const run = { ...this.record(row), pendingGate: row.pendingGate!, gateCheckpointId: row.gateCheckpointId };
    return {
      run,
      decisions: async () =>
        this.decisions
          .filter((d) => d.runId === row.id && d.waitSeq === row.eventSeq)
          .map(({ runId: _r, waitSeq: _w, ...d }) => d),
      record: async (decision: NewStopDecision) => {
        this.statement();
        const approving = decision.kind === 'approve' || decision.kind === 'edit';
        const duplicate =
          approving &&
          decision.decidedBy.id !== null &&
          this.decisions.some(
            (d) =>
              d.runId === row.id &&
              d.waitSeq === row.eventSeq &&
              d.round === decision.round &&
              d.decidedBy.id === decision.decidedBy.id &&
              (d.kind === 'approve' || d.kind === 'edit'),
          );
        if (duplicate) return false;
        this.decisions.push({
          runId: row.id,
          waitSeq: row.eventSeq,
          kind: decision.kind,
          decidedBy: decision.decidedBy,
          round: decision.round,
          edits: decision.edits,
          arguments: decision.arguments,
          argumentsSha256: decision.argumentsSha256,
          decidedAt: new Date(this.now()),
        });
        return true;
      },
      showEdits: async (edits: Record<string, string>) => {
        row.pendingGate = { ...row.pendingGate!, context: { ...row.pendingGate!.context, ...edits } };
      },
      showToolCall: async (call: PendingToolCall) => {
        row.pendingGate = { ...row.pendingGate!, tool_call: call };
      },
      claim: async (resume: PendingResume, lease: Lease, seqReserved: number) => {
        this.statement();
        if (!this.guarded(row, 'resume')) return;
        Object.assign(row, {
          status: 'running',
          pendingGate: null,
          ownerId: lease.owner,
          leaseUntil: this.now() + lease.leaseS * 1000,
          resume,
          attempts: 1,
          handovers: 0,
          seqReserved: Math.max(row.seqReserved, seqReserved),
          gateExpiresAt: null,
          gateCheckpointId: null,
        });
      },
    };
  }

  readonly runStore: RunStore = {
    start: async (run: NewRun, lease: Lease, seqReserved: number): Promise<StartOutcome> => {
      this.statement();
      if (run.localRuntime && run.localCap !== null) {
        const going = [...this.runs.values()].filter(
          (r) => r.createdBy === run.createdBy && r.status === 'running' && r.localRuntime,
        ).length;
        if (going >= run.localCap) return { outcome: 'over_limit', going };
      }
      if (run.newThread) {
        this.threads.set(run.threadId, { projectId: run.newThread.projectId });
      } else {
        const busy = this.busy(run.threadId);
        const head = busy.active ?? busy.queued[0];
        if (head) {
          const active = { id: head.id, status: head.status };
          if (run.strategy === 'enqueue') {
            this.insert(run, lease, { status: 'queued', seqReserved: 1, eventSeq: 1 });
            const position = busy.queued.length + 1;
            const data = JSON.stringify({ type: 'run_queued', run_id: run.id, thread_id: run.threadId, position });
            this.storeEvents([{ runId: run.id, seq: 1, type: 'run_queued', data }]);
            return { outcome: 'queued', active, position };
          }
          if (run.strategy === 'rollback' && busy.active) {
            const decided = this.decisions.some((d) => d.runId === busy.active!.id);
            const toolRan = [...this.calls.values()].some((c) => c.runId === busy.active!.id && c.attempts > 0);
            if (decided || toolRan)
              return { outcome: 'not_rollbackable', active, why: decided ? 'decision' : 'tool_call' };
          }
          if (run.strategy === 'reject') return { outcome: 'active', active };
          const reason = `${run.strategy === 'rollback' ? 'rolled back' : 'interrupted'} by run ${run.id}`;
          for (const queued of busy.queued) this.cancelRow(queued, reason);
          if (busy.active && run.strategy === 'rollback') {
            this.runs.delete(busy.active.id);
            this.events.delete(busy.active.id);
            this.nodes.delete(busy.active.id);
            for (const l of this.listeners) l.cancelled?.(busy.active.id);
          } else if (busy.active) {
            this.cancelRow(busy.active, reason);
          }
        }
      }
      this.insert(run, lease, { status: RUN_TRANSITIONS.start.to, seqReserved, eventSeq: 0 });
      return { outcome: 'started' };
    },

    claimQueued: async (lease: Lease, seqReserved: number, threadId?: string) => {
      this.statement();
      const next = [...this.runs.values()]
        .filter((r) => r.status === 'queued' && (!threadId || r.threadId === threadId))
        .filter((r) => !this.busy(r.threadId).active)
        .sort((a, b) => a.queuedAt! - b.queuedAt!)[0];
      if (!next) return undefined;
      Object.assign(next, {
        status: RUN_TRANSITIONS.dequeue.to,
        startedAt: this.now(),
        ownerId: lease.owner,
        leaseUntil: this.now() + lease.leaseS * 1000,
        attempts: 1,
        handovers: 0,
        seqReserved: Math.max(next.seqReserved, next.eventSeq + seqReserved),
      });
      return this.record(next);
    },

    get: async (runId: string) => {
      this.statement('read');
      const row = this.runs.get(runId);
      return row && this.record(row);
    },

    progress: async (runId: string): Promise<RunProgress | undefined> => {
      this.statement('read');
      const row = this.runs.get(runId);
      return (
        row && {
          status: row.status,
          eventSeq: row.eventSeq,
          executing: (row.status === 'running' && row.ownerId !== null) || row.status === 'queued',
        }
      );
    },

    claimLapsed: async (lease: Lease) => {
      this.statement();
      const lapsed = [...this.runs.values()]
        .filter((r) => r.status === 'running' && r.leaseUntil !== null && r.leaseUntil < this.now())
        .sort((a, b) => a.leaseUntil! - b.leaseUntil!)[0];
      if (!lapsed) return undefined;
      Object.assign(lapsed, {
        ownerId: lease.owner,
        leaseUntil: this.now() + lease.leaseS * 1000,
        attempts: lapsed.attempts + 1,
      });
      return this.record(lapsed);
    },

    renewLeases: async (lease: Lease) => {
      this.statement();
      const ours = [...this.runs.values()].filter((r) => r.ownerId === lease.owner && r.status === 'running');
      for (const row of ours) row.leaseUntil = this.now() + lease.leaseS * 1000;
      return ours.map((r) => r.id);
    },

    releaseLeases: async (owner: string, only?: readonly string[]) => {
      this.statement();
      for (const row of this.runs.values()) {
        if (row.ownerId === owner && row.status === 'running' && (!only || only.includes(row.id))) {
          row.leaseUntil = this.now() - 1;
        }
      }
    },

    handOver: async (owner: string) => {
      this.statement();
      for (const row of this.runs.values()) {
        if (row.ownerId === owner && row.status === 'running') {
          row.leaseUntil = this.now() - 1;
          row.handovers += 1;
        }
      }
    },

    reserveSeq: async (runId: string, holder: LegHolder, upTo: number) => {
      this.statement();
      const row = this.runs.get(runId);
      if (row && this.runsIn(row, holder)) row.seqReserved = Math.max(row.seqReserved, upTo);
    },

    pause: async (runId: string, holder: LegHolder, pause: PauseAtGate, events: NewEvent[]) => {
      this.statement();
      const row = this.runs.get(runId);
      if (!this.guarded(row, 'pause') || !this.runsIn(row, holder)) return false;
      Object.assign(row, {
        status: RUN_TRANSITIONS.pause.to,
        pendingGate: pause.gate,
        eventSeq: events.at(-1)!.seq,
        ownerId: null,
        leaseUntil: null,
        resume: null,
        gateExpiresAt: pause.expiresAt?.getTime() ?? null,
        gateCheckpointId: pause.checkpointId,
      });
      this.storeEvents(events);
      return true;
    },

    finish: async (runId: string, holder: LegHolder, end: RunEnd, events: NewEvent[]) => {
      this.statement();
      const row = this.runs.get(runId);
      const name = end.status === 'completed' ? 'complete' : end.status === 'rejected' ? 'reject' : 'fail';
      if (!this.guarded(row, name) || !this.runsIn(row, holder)) return false;
      Object.assign(row, {
        status: end.status,
        eventSeq: events.at(-1)!.seq,
        endReason: end.endReason ?? null,
        ownerId: null,
        leaseUntil: null,
        resume: null,
      });
      if (end.status === 'error') this.closeNodes(runId, 'error');
      this.storeEvents(events);
      this.ended(row);
      return true;
    },

    cancel: async (runId: string, reason: string | null) => {
      this.statement();
      const row = this.runs.get(runId);
      if (!this.guarded(row, 'cancel')) return false;
      this.cancelRow(row, reason);
      return true;
    },

    addRoute: async (runId: string, route: RouteMatch) => {
      this.statement();
      const row = this.runs.get(runId);
      if (row && !row.routes.some((r) => JSON.stringify(r) === JSON.stringify(route))) row.routes.push(route);
    },

    atStop: <T>(runId: string, work: (stop: StopTx | undefined) => Promise<T>) =>
      this.locked(runId, async () => {
        this.statement();
        const row = this.runs.get(runId);
        const waiting = row?.status === 'waiting_approval' && row.pendingGate !== null;
        return work(waiting ? this.stopTx(row) : undefined);
      }),

    atExpiredStop: async <T>(work: (stop: StopTx) => Promise<T>): Promise<T | undefined> => {
      this.statement();
      const expired = [...this.runs.values()]
        .filter(
          (r) =>
            r.status === 'waiting_approval' &&
            r.pendingGate !== null &&
            r.gateExpiresAt !== null &&
            r.gateExpiresAt <= this.now() &&
            !this.locks.has(`expiring:${r.id}`),
        )
        .sort((a, b) => a.gateExpiresAt! - b.gateExpiresAt!)[0];
      if (!expired) return undefined;
      // Skipped by others while held, as FOR UPDATE SKIP LOCKED skips a row.
      this.locks.set(`expiring:${expired.id}`, Promise.resolve());
      try {
        return await this.locked(expired.id, () => work(this.stopTx(expired)));
      } finally {
        this.locks.delete(`expiring:${expired.id}`);
      }
    },
  };

  readonly writeStore: RunWriteStore = {
    write: async ({ events, nodes, calls }: RunWrites) => {
      this.statement();
      this.storeEvents(events.filter((event) => this.heldBy(event)));
      this.writeNodes(nodes);
      this.recordCalls(calls);
    },
  };

  readonly eventStore: EventStore = {
    after: async (runId: string, afterSeq: number, limit: number) => {
      this.statement('read');
      return (this.events.get(runId) ?? []).filter((e) => e.seq > afterSeq).slice(0, limit);
    },
    lastSeq: async (runId: string) => {
      this.statement('read');
      return this.events.get(runId)?.at(-1)?.seq ?? 0;
    },
  };

  private closeNodes(runId: string, status: NodeStatus): void {
    for (const row of this.nodes.get(runId) ?? []) {
      if (row.exitedAt === null) Object.assign(row, { status, exitedAt: this.now() / 1000 });
    }
  }

  private writeNodes(rows: readonly NodeWrite[]): void {
    const ago = (at: number | null) => (at === null ? null : (this.now() - (performance.now() - at)) / 1000);
    for (const write of rows) {
      const list = this.nodes.get(write.runId) ?? [];
      this.nodes.set(write.runId, list);
      const existing = list.find((r) => r.key === write.key);
      const fields = { status: write.status, output: write.output, exitedAt: ago(write.exitedAt) };
      if (existing) Object.assign(existing, fields);
      else list.push({ key: write.key, node: write.node, enteredAt: ago(write.enteredAt)!, ...fields });
    }
  }

  private recordCalls(calls: readonly ModelCallWrite[]): void {
    for (const call of calls) {
      const run = this.runs.get(call.runId);
      if (!run || this.modelCallRows.has(call.id)) continue;
      this.modelCallRows.set(call.id, { ...call, projectId: run.projectId, userId: run.createdBy, agent: run.agent });
    }
  }

  readonly nodeStore: NodeStore = {
    dropRunning: async (runId: string) => {
      this.statement();
      const list = this.nodes.get(runId) ?? [];
      const running = list.filter((r) => r.exitedAt === null && r.status === 'running');
      this.nodes.set(
        runId,
        list.filter((r) => !running.includes(r)),
      );
      return running.map((r) => r.node);
    },
    closeOpen: async (runId: string, status: NodeStatus) => {
      this.statement();
      this.closeNodes(runId, status);
    },
  };

  private readonly questionRows = new Map<
    string,
    NewToolQuestion & { state: ToolQuestionState; content: Record<string, unknown> | null; by: string | null }
  >();

  /** A person's answer to a question, as the answer endpoint takes it once (for the engine's tests). */
  answerQuestion(
    runId: string,
    waitSeq: number,
    action: QuestionAction,
    content: Record<string, unknown> | null,
    by: string,
  ) {
    const row = this.questionRows.get(`${runId}:${waitSeq}`);
    if (row?.state !== 'asked') return false;
    Object.assign(row, { state: action, content, by });
    return true;
  }

  readonly questions: ToolQuestionStore = {
    ask: async (question) => {
      this.statement();
      const key = `${question.runId}:${question.waitSeq}`;
      if (!this.questionRows.has(key))
        this.questionRows.set(key, { ...question, state: 'asked', content: null, by: null });
    },
    answer: async (runId, waitSeq) => {
      this.statement('read');
      const row = this.questionRows.get(`${runId}:${waitSeq}`);
      if (!row || (row.state !== 'accept' && row.state !== 'decline' && row.state !== 'cancel')) return null;
      return { action: row.state, content: row.content, by: row.by };
    },
    close: async (runId, waitSeq, state) => {
      this.statement();
      const row = this.questionRows.get(`${runId}:${waitSeq}`);
      if (row?.state !== 'asked') return false;
      row.state = state;
      return true;
    },
    withdrawAll: async (runId) => {
      this.statement();
      let withdrawn = 0;
      for (const row of this.questionRows.values()) {
        if (row.runId === runId && row.state === 'asked') {
          row.state = 'withdrawn';
          withdrawn++;
        }
      }
      return withdrawn;
    },
  };

  readonly toolCalls: ToolCallStore = {
    turn: async (id: string) => {
      this.statement('read');
      return this.turns.get(id);
    },
    saveTurn: async (id: string, _runId: string, turn: ModelTurnRecord) => {
      this.statement();
      if (!this.turns.has(id)) this.turns.set(id, structuredClone(turn));
    },
    propose: async (call: NewToolCall) => {
      this.statement();
      const created = !this.calls.has(call.id);
      if (created) this.calls.set(call.id, { ...call, decision: null, attempts: 0, result: null });
      return { record: structuredClone(this.calls.get(call.id)!), created };
    },
    decide: async (id: string, decision: GateDecision) => {
      this.statement();
      const call = this.calls.get(id);
      if (call && (!call.decision || (decision.rerun_after ?? 0) > (call.decision.rerun_after ?? 0))) {
        call.decision = structuredClone(decision);
      }
    },
    start: async (id: string, attempts: number) => {
      this.statement();
      const call = this.calls.get(id);
      if (!call || call.attempts !== attempts) return false;
      call.attempts++;
      return true;
    },
    finish: async (id: string, result: { text: string; isError: boolean }) => {
      this.statement();
      const call = this.calls.get(id);
      if (call && !call.result) call.result = { ...result };
    },
    granted: async (threadId: string, tool: string, role: Role) => {
      this.statement('read');
      const held = this.grants.get(`${threadId}/${tool}`);
      // ROLES runs from the highest role down.
      return held !== undefined && ROLES.indexOf(held) <= ROLES.indexOf(role);
    },
  };

  readonly comparedRuns: ComparedRecordStore = {
    recordOf: async (runId: string) => {
      this.statement('read');
      return {
        calls: [...this.calls.values()]
          .filter((c) => c.runId === runId && c.result !== null && c.replay !== 'not_run')
          .map((c) => ({ tool: c.tool, argumentsSha256: c.argumentsSha256, result: { ...c.result! } })),
        decisions: (this.events.get(runId) ?? [])
          .filter((e) => (GATE_DECISION_EVENTS as readonly string[]).includes(e.type))
          .map((e) => JSON.parse(e.data) as GateDecisionEvent),
      };
    },
    // The memory stores keep no datasets: an item answers from an empty record, as one typed by hand does.
    itemRecordOf: async () => {
      this.statement('read');
      return { calls: [], decisions: [] };
    },
  };

  readonly modelCalls: ModelCallStore = {
    ofRun: async (runId: string) => {
      this.statement('read');
      return [...this.modelCallRows.values()].filter((c) => c.runId === runId).map((c) => ({ ...c }));
    },
  };

  /**
   * Allows a tool for the rest of a thread, as a person's grant does (the services write grants, not the engine), by a
   * granter whose role on the thread's project is `role`; given again, her role as it changed since.
   */
  grant(threadId: string, tool: string, role: Role = 'admin'): void {
    this.grants.set(`${threadId}/${tool}`, role);
  }
}
