import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { DEFAULT_QUESTION_EXPIRY_S } from '../contracts/tool-questions';
import type { CatalogEntry } from '../assets/catalog';
import { errorMessage } from '../contracts/errors';
import type { Checkpoint, GateApprovals, GateDecision, NodeConfig } from '../contracts/runs';
import type { Logger } from '../log';
import type { ModelClient } from '../models/model-client';
import type { PriceTable } from '../models/model-prices';
import { Admission } from './admission';
import { LegStoppedError } from './errors';
import { EventLog, SEQ_BLOCK } from './events/event-log';
import { checkpointAt, threadCheckpoints } from './graph/checkpoints';
import type { LoggedEvent } from './events/logged-event';
import { NO_SLOTS, RunExecution, type ExecutionDeps, type RunSlots } from './execution';
import { expire, roundOf, settle, type PersonDecision } from './gates';
import { compileGraph, type CompiledRunGraph } from './graph/graph-builder';
import { ModelCallLog } from './model-call-log';
import type { BudgetGuard } from './budget-guard';
import { NodeLog } from './node-log';
import { RunWriter } from './run-writer';
import type { IsTransient } from '../storage/retry';
import type { RunObserver } from './run-observer';
import type {
  EventStore,
  Lease,
  NewRun,
  NodeStore,
  RunRecord,
  RunStore,
  StartOutcome,
  StopTx,
  RunWriteStore,
  ToolCallStore,
  ComparedRecordStore,
  ToolQuestionStore,
} from '../storage/types';
import type { Toolbox } from '../tools/toolbox';
import { recordWait, type WaitAtStop } from '../tracing/run-trace';

export interface EngineDeps {
  /** This process, as the owner of the runs it executes. */
  owner: string;
  runs: RunStore;
  events: EventStore;
  nodes: NodeStore;
  checkpointer: BaseCheckpointSaver;
  models: ModelClient;
  /** The local-runtime slots of runs' model calls, as far as a leg's start and its stops go; none: nothing is kept. */
  slots?: RunSlots;
  /** Where runs' events, node rows and model calls are written, together (run-writer.ts). */
  records: RunWriteStore;
  /** The usage accounting prices every model call by this table as it ends (docs/observability.md). */
  prices: PriceTable;
  /** The budgets each model call of a run is checked against first; none: runs are never limited. */
  budgets?: BudgetGuard;
  /** The tools of runs' phases, and the record of their calls (docs/tools.md). */
  toolbox: Toolbox;
  toolCalls: ToolCallStore;
  /** The record of the run a comparison compares (docs/compare.md). */
  comparedRuns: ComparedRecordStore;
  /** Questions tool servers ask mid-call, and how long one waits for a person (an hour unless said otherwise). */
  questions: ToolQuestionStore;
  questionExpiryS?: number;
  /** What the run runs: the manifest it is pinned to (its version), whatever was published since it started. */
  agentOf(run: RunRecord): Promise<CatalogEntry | undefined>;
  /** Builds the model's project context from a run's project path (local folder or git URL) in its project. */
  projectContext(project: { projectId: string; projectPath: string }, signal: AbortSignal): Promise<string>;
  /** Saved per-node overrides of an agent, for the run's project. */
  nodeConfigs(agent: string, projectId: string): Promise<ReadonlyMap<string, NodeConfig>>;
  isTransient: IsTransient;
  runTimeoutS: number;
  /** How long a lease lasts unless renewed; renewed, and lapsed ones looked for, every quarter of it. */
  leaseS: number;
  /** Executions of one run (the first included) before it is given up. */
  maxAttempts: number;
  /** Legs this process executes at once. */
  maxActive: number;
  /** How long a leg's writes bear a database that is away, counted from the first failure (DATABASE_WAIT_S). */
  databaseWaitS: number;
  /** How often a reader of a run executed elsewhere looks for new events without a notification. */
  pollMs: number;
  log: Logger;
  failures: Logger;
  /** Told of each leg's and each phase's end, for the metrics; none when they are off. */
  observer?: RunObserver;
  /** Prompts and answers go into the model calls' spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). */
  traceContent?: boolean;
}

/** A run to start: its row, and the project it runs in. */
export interface RunStart extends NewRun {
  projectId: string;
}

/** A person's decision at the stop a run waits at. */
export interface DecisionRequest {
  runId: string;
  gate: string;
  /** The stop at the gate being decided: its gate_waiting event's id. */
  waitSeq: number;
  /**
   * The round of the stop its person read (see contracts/stops.ts); null: she named none, which is taken only while
   * the stop is in its first round.
   */
  round: number | null;
  decision: PersonDecision;
  approvalsNeeded: number;
}

export type DecisionOutcome =
  /** The gate no longer waits at that stop (decided, cancelled, or reached again since). */
  | { outcome: 'stale' }
  /** An approver's edit changed what the stop shows since the round its person read: `round` is the stop's now. */
  | { outcome: 'changed'; round: number }
  /** This person has already approved this round. */
  | { outcome: 'duplicate' }
  /** Recorded; the gate waits for more approvals. */
  | { outcome: 'waiting'; approvals: GateApprovals }
  /** Recorded, and the run resumes (executed by this process). */
  | { outcome: 'resumed'; approvals: GateApprovals };

/**
 * The run engine: it admits work (a new run, a fork, a decision, an expiry), and executes run rows. Every leg of a
 * run, whatever started it, goes the same way: its row is this process's (a lease), an execution plans the leg from
 * the row and the thread's latest checkpoint and runs it (execution.ts). The engine renews its leases, takes over
 * the runs of processes that died, and acts on gates whose deadline passed (supervise()). Services reach runs only
 * through it.
 */
export class Engine {
  readonly events: EventLog;
  private readonly records: RunWriter;
  private readonly nodes: NodeLog;
  private readonly admission: Admission;
  private readonly executions = new Map<string, RunExecution>();
  /** The order executions were registered in: which ones a lease renewal's answer can speak for. */
  private readonly registered = new WeakMap<RunExecution, number>();
  private registrations = 0;
  /** Runs whose row this process is writing or claiming, before their execution is registered. */
  private readonly admitting = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  // By entry: a version no run uses any more is dropped with its entry (services/agent-directory.ts caches a few).
  private readonly graphs = new WeakMap<CatalogEntry, CompiledRunGraph>();
  private supervisorTimer?: NodeJS.Timeout;
  private supervising?: Promise<void>;
  private renewing?: Promise<void>;
  /** Claims of run rows begun, and under way: a row claimed is this process's before its execution is registered. */
  private claimsBegun = 0;
  private claimsUnderWay = 0;
  private stopped = false;

  constructor(private readonly deps: EngineDeps) {
    this.records = new RunWriter(deps.records, { isTransient: deps.isTransient, log: deps.log });
    this.events = new EventLog({
      store: deps.events,
      records: this.records,
      runs: deps.runs,
      isTransient: deps.isTransient,
      log: deps.log,
      pollMs: deps.pollMs,
      waitMs: deps.databaseWaitS * 1000,
    });
    this.nodes = new NodeLog(this.records, new ModelCallLog(this.records, deps.prices));
    this.admission = new Admission(deps.maxActive);
  }

  private get lease(): Lease {
    return { owner: this.deps.owner, leaseS: this.deps.leaseS };
  }

  /**
   * Legs executing here, legs waiting for a place, and the events published here and not yet stored (read by the
   * metrics at each scrape).
   */
  get load(): { active: number; waiting: number; eventBacklog: number } {
    return { active: this.admission.active, waiting: this.admission.queued, eventBacklog: this.events.backlog };
  }

  /** The compiled graph of an agent or command: compiled once, shared by every execution and every history read. */
  graphOf(entry: CatalogEntry): CompiledRunGraph {
    let graph = this.graphs.get(entry);
    if (!graph) {
      graph = compileGraph(entry, this.deps.checkpointer);
      this.graphs.set(entry, graph);
    }
    return graph;
  }

  /** Writes a run's row (refused when its thread is busy or its user at her limit) and executes it. */
  async start(run: RunStart): Promise<StartOutcome> {
    this.admitting.add(run.id);
    try {
      const outcome = await this.deps.runs.start(run, this.lease, SEQ_BLOCK);
      if (outcome.outcome === 'started') {
        this.execute(
          {
            id: run.id,
            threadId: run.threadId,
            projectId: run.projectId,
            agent: run.agent,
            model: run.model,
            message: run.message,
            projectPath: run.projectPath,
            status: 'running',
            attempts: 1,
            handovers: 0,
            seqReserved: SEQ_BLOCK,
            eventSeq: 0,
            forkedFrom: run.forkedFrom,
            resume: null,
            endReason: null,
            agentVersion: run.agentVersion,
            manifestHash: run.manifestHash,
            traceContext: run.traceContext,
            // Read with the run's row when a leg is claimed; a run started here is named after its message if need be.
            threadName: null,
            comparisonOf: run.comparisonOf,
            experimentItem: run.experimentItem?.itemId ?? null,
          },
          run.newThread !== null,
        );
      }
      return outcome;
    } finally {
      this.admitting.delete(run.id);
    }
  }

  /**
   * Starts the next queued run of a thread whose runs ahead of it have ended (of any such thread with none given), if
   * another process has not: told by the database when a run ends with runs queued behind it, and looked for by the
   * supervisor in case that notice was lost.
   */
  async startQueued(threadId?: string): Promise<void> {
    if (this.stopped) return;
    try {
      const run = await this.claiming(() => this.deps.runs.claimQueued(this.lease, SEQ_BLOCK, threadId));
      if (run) this.execute(run);
    } catch (error) {
      this.deps.log.warn(`starting a queued run failed: ${errorMessage(error)}`);
    }
  }

  /**
   * Records a person's decision at the stop a run waits at, and resumes the run when the decision settles the gate
   * (engine/gates.ts): in one transaction under the run's row lock, so two decisions at once are counted one after
   * the other, and exactly one resumes the run.
   */
  async decide(request: DecisionRequest): Promise<DecisionOutcome> {
    this.admitting.add(request.runId);
    try {
      let claimed: RunRecord | undefined;
      let waited: WaitAtStop | undefined;
      const outcome = await this.deps.runs.atStop(request.runId, async (stop): Promise<DecisionOutcome> => {
        const waitsFor = stop?.run.pendingGate.tool_call?.call_id ?? null;
        if (
          !stop ||
          stop.run.eventSeq !== request.waitSeq ||
          stop.run.pendingGate.node !== request.gate ||
          waitsFor !== (request.decision.toolCall?.id ?? null)
        ) {
          return { outcome: 'stale' };
        }
        const before = await stop.decisions();
        const round = roundOf(before);
        if ((request.round ?? 1) !== round) return { outcome: 'changed', round };
        const settled = settle(before, request.decision, request.approvalsNeeded);
        if (settled.outcome === 'duplicate') return settled;
        if (!(await stop.record(settled.record))) return { outcome: 'duplicate' };
        if (settled.outcome === 'waiting') {
          if (settled.record.edits) await stop.showEdits(settled.record.edits);
          const call = stop.run.pendingGate.tool_call;
          if (call && settled.record.kind === 'edit' && settled.record.arguments) {
            await stop.showToolCall({
              ...call,
              arguments: JSON.parse(settled.record.arguments) as Record<string, unknown>,
              canonical_arguments: settled.record.arguments,
              arguments_sha256: settled.record.argumentsSha256!,
            });
          }
          return { outcome: 'waiting', approvals: settled.approvals };
        }
        claimed = await this.claim(stop, settled.decision);
        waited = waitAt(stop, settled.decision.kind);
        return { outcome: 'resumed', approvals: settled.approvals };
      });
      if (waited) recordWait(waited);
      if (claimed) this.execute(claimed);
      return outcome;
    } finally {
      this.admitting.delete(request.runId);
    }
  }

  /** Cancels a running or waiting run, here and in whichever process executes it; false when it had ended. */
  async cancel(runId: string, reason: string | null): Promise<boolean> {
    if (!(await this.deps.runs.cancel(runId, reason))) return false;
    this.cancelled(runId);
    return true;
  }

  /** A run was cancelled (here, or announced by another process): its execution here, if any, stops. */
  cancelled(runId: string): void {
    this.executions.get(runId)?.stop('cancelled', new LegStoppedError('run cancelled'));
  }

  /** A run's events after `afterId`, to its end or the gate it waits at (see EventLog.join). */
  join(runId: string, afterId: number, signal?: AbortSignal): AsyncGenerator<LoggedEvent[]> {
    return this.events.join(runId, afterId, signal);
  }

  /**
   * Whether a reader who has a run's events up to `afterId` has everything it will send until someone acts on it: it
   * ended, or waits at a gate, and its last event is at or before `afterId`.
   */
  nothingAfter(runId: string, afterId: number): Promise<boolean> {
    return this.events.nothingAfter(runId, afterId);
  }

  /** The id of the run's last stored event (0 before its first). */
  lastEventId(runId: string): Promise<number> {
    return this.deps.events.lastSeq(runId);
  }

  /** A thread's checkpoints across its runs and branches, oldest first (see graph/checkpoints.ts). */
  history(entry: CatalogEntry, threadId: string, limit?: number): Promise<Checkpoint[]> {
    return threadCheckpoints(this.graphOf(entry), threadId, limit);
  }

  /** One checkpoint of a thread, or undefined. */
  checkpoint(entry: CatalogEntry, threadId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    return checkpointAt(this.graphOf(entry), threadId, checkpointId);
  }

  /** Whether the thread's latest checkpoint waits at an interrupt (false when the checkpoint is gone). */
  async hasPendingInterrupt(threadId: string): Promise<boolean> {
    const tuple = await this.deps.checkpointer.getTuple({ configurable: { thread_id: threadId } });
    return Boolean(tuple?.pendingWrites?.some(([, channel]) => channel === '__interrupt__'));
  }

  /** Starts renewing this process's leases and acting on lapsed runs and gates, at once and then periodically. */
  supervise(): void {
    const tick = () => {
      if (this.stopped) return;
      // A renewal is never held up behind the take-overs of the tick before: under load those wait for the pool, and
      // a renewal late by a lease would hand this process's live runs to another, or back to itself in a new leg.
      this.renewing ??= this.renewOnce().finally(() => {
        this.renewing = undefined;
      });
      this.supervising ??= this.renewing
        .then(() => this.takeOverOnce())
        .finally(() => {
          this.supervising = undefined;
        });
    };
    this.supervisorTimer = setInterval(tick, (this.deps.leaseS * 1000) / 4);
    this.supervisorTimer.unref();
    tick();
  }

  /**
   * Stops every execution and waits for them; a process that shuts down mid-run hands its runs over to the others
   * (or to itself, restarted), as one that dies does, but at once.
   */
  async shutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.supervisorTimer);
    await Promise.all([this.renewing, this.supervising]);
    for (const execution of this.executions.values()) {
      execution.stop('shutdown', new LegStoppedError('the server shut down while the run was running'));
    }
    await Promise.allSettled([...this.running]);
    this.nodes.close();
    await this.events.close();
    await this.records.close();
    await this.deps.runs.handOver(this.deps.owner).catch(() => undefined);
  }

  private async claim(stop: StopTx, decision: GateDecision): Promise<RunRecord> {
    const seqReserved = Math.max(stop.run.seqReserved, stop.run.eventSeq) + SEQ_BLOCK;
    const resume = { decision, checkpointId: stop.run.gateCheckpointId };
    await stop.claim(resume, this.lease, seqReserved);
    const { pendingGate: _gate, gateCheckpointId: _checkpoint, ...run } = stop.run;
    return { ...run, status: 'running' as const, attempts: 1, handovers: 0, seqReserved, resume };
  }

  /** `threadIsNew`: the run was just created here with its thread (RunExecution). */
  private execute(run: RunRecord, threadIsNew = false): void {
    const deps: ExecutionDeps = {
      owner: this.deps.owner,
      runs: this.deps.runs,
      eventStore: this.deps.events,
      nodeStore: this.deps.nodes,
      events: this.events,
      nodes: this.nodes,
      checkpointer: this.deps.checkpointer,
      models: this.deps.models,
      budgets: this.deps.budgets,
      slots: this.deps.slots ?? NO_SLOTS,
      toolbox: this.deps.toolbox,
      toolCalls: this.deps.toolCalls,
      comparedRuns: this.deps.comparedRuns,
      questions: this.deps.questions,
      questionExpiryS: this.deps.questionExpiryS ?? DEFAULT_QUESTION_EXPIRY_S,
      agentOf: this.deps.agentOf,
      graphOf: (entry) => this.graphOf(entry),
      projectContext: this.deps.projectContext,
      nodeConfigs: this.deps.nodeConfigs,
      admission: this.admission,
      runTimeoutS: this.deps.runTimeoutS,
      databaseWaitS: this.deps.databaseWaitS,
      maxAttempts: this.deps.maxAttempts,
      isTransient: this.deps.isTransient,
      log: this.deps.log,
      failures: this.deps.failures,
      observer: this.deps.observer,
      traceContent: this.deps.traceContent ?? false,
    };
    const execution = new RunExecution(run, deps, threadIsNew);
    this.executions.get(run.id)?.stop('lost', new LegStoppedError('the run went on in another leg'));
    this.executions.set(run.id, execution);
    this.registered.set(execution, ++this.registrations);
    const done = execution
      .execute()
      .catch((error) => this.deps.failures.error(`run ${run.id}: its execution failed unexpectedly`, error))
      .finally(() => {
        if (this.executions.get(run.id) === execution) this.executions.delete(run.id);
        this.running.delete(done);
      });
    this.running.add(done);
  }

  /** Runs a claim of run rows (lapsed, queued, at an expired gate); the caller registers what it claimed at once. */
  private async claiming<T>(claim: () => Promise<T>): Promise<T> {
    this.claimsBegun++;
    this.claimsUnderWay++;
    try {
      return await claim();
    } finally {
      this.claimsUnderWay--;
    }
  }

  /** Renews this process's leases, stops the legs of runs it no longer holds, and lets go of runs it holds idle. */
  private async renewOnce(): Promise<void> {
    const { runs } = this.deps;
    try {
      // A run's row is written (inserted, or claimed at a gate) before its execution is registered here. So a
      // renewal's answer speaks for the executions registered before it was sent; one registered since may belong to
      // a row the renewal's snapshot did not see yet.
      const covered = this.registrations;
      const claimsBefore = this.claimsUnderWay === 0 ? this.claimsBegun : -1;
      const ours = new Set(await runs.renewLeases(this.lease));
      for (const execution of this.executions.values()) {
        if ((this.registered.get(execution) ?? 0) > covered || execution.stopReason) continue;
        if (!ours.has(execution.run.id)) {
          execution.stop('lost', new LegStoppedError('the run is no longer executed by this process'));
        }
      }
      // Leased here and executed nowhere: a leg that ended while the database was away, unable to record its end, or
      // a claim whose answer was lost on the way back. Let go rather than renewed for ever, they are taken over
      // (here or by another process) as any lapsed run is: the next leg continues after every id handed out.
      // A claim made while the renewal was under way may be among them, its execution not yet registered: those wait
      // for the next renewal.
      const claimed = claimsBefore !== this.claimsBegun || this.claimsUnderWay > 0;
      const idle = [...ours].filter((runId) => !this.executions.has(runId) && !this.admitting.has(runId));
      if (idle.length > 0 && !claimed && !this.stopped) await runs.releaseLeases(this.deps.owner, idle);
    } catch (error) {
      this.deps.log.warn(`renewing run leases failed: ${errorMessage(error)}`);
    }
  }

  /** Takes over lapsed runs and queued ones whose thread is free, and acts on gates whose deadline passed. */
  private async takeOverOnce(): Promise<void> {
    const { runs } = this.deps;
    if (this.stopped) return;
    try {
      const lapsed = () => this.claiming(() => runs.claimLapsed(this.lease));
      for (let run = await lapsed(); run; run = await lapsed()) {
        this.execute(run);
        if (this.stopped) return;
      }
      const queued = () => this.claiming(() => runs.claimQueued(this.lease, SEQ_BLOCK));
      for (let run = await queued(); run; run = await queued()) {
        this.execute(run);
        if (this.stopped) return;
      }
      for (;;) {
        let waited: WaitAtStop | undefined;
        const expired = await this.claiming(() =>
          runs.atExpiredStop(async (stop) => {
            const { record, decision } = expire(stop.run.pendingGate);
            await stop.record(record);
            const claimed = await this.claim(stop, decision);
            waited = waitAt(stop, 'expire');
            this.deps.log.info(
              `gate ${stop.run.pendingGate.node} expired thread=${stop.run.threadId} run=${stop.run.id}: ` +
                `${decision.outcome}${decision.to ? ` → ${decision.to}` : ''}`,
            );
            return claimed;
          }),
        );
        if (!expired) break;
        if (waited) recordWait(waited);
        this.execute(expired);
        if (this.stopped) return;
      }
    } catch (error) {
      this.deps.log.warn(`taking over runs failed: ${errorMessage(error)}`);
    }
  }
}

/** The stop a decision settled, as its wait's span tells it: since when the run waited there, and what ended it. */
function waitAt(stop: StopTx, decision: string): WaitAtStop {
  const gate = stop.run.pendingGate;
  return {
    runId: stop.run.id,
    traceContext: stop.run.traceContext,
    kind: gate.tool_call ? 'tool_call' : 'gate',
    node: gate.node,
    tool: gate.tool_call?.tool,
    since: gate.waiting_since ? new Date(gate.waiting_since) : new Date(),
    decision,
  };
}
