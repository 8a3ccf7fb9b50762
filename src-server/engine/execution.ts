import { Command } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type { CatalogEntry } from '../assets/catalog';
import type { RoutingRule, RuleSource } from '../contracts/assets';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunEvent, RunEventOf } from '../contracts/events';
import { errorDetail } from '../contracts/errors';
import type { NodeConfig, NodeStatus, NodeWarning, PendingGate } from '../contracts/runs';
import type { Logger } from '../log';
import type { CallUsage, LoadingInfo, ModelClient, QueueInfo, RetryInfo, TrimReport } from '../models/model-client';
import type { Admission } from './admission';
import type { BudgetGuard } from './budget-guard';
import { decidedNodeStatus, decisionEvent } from './decision-events';
import { ComparedRun } from './comparison';
import { BudgetExceeded, RunAbandonedError, TimeoutError } from './errors';
import { SEQ_BLOCK, type EventLog, type LegPublisher } from './events/event-log';
import { writeBranchPoint } from './graph/checkpoints';
import {
  executionConfig,
  initialState,
  type CompiledRunGraph,
  type Execution,
  type NodeHooks,
  type RunStateValue,
} from './graph/graph-builder';
import type { NodeLog, RunNodes } from './node-log';
import { planLeg, type CheckpointSummary, type LegPlan } from './plan';
import type { LegOutcome, RunObserver } from './run-observer';
import { retryTransient, type IsTransient } from '../storage/retry';
import type {
  ComparedRecordStore,
  EventStore,
  LegHolder,
  NodeStore,
  RunRecord,
  RunStore,
  ToolCallStore,
  ToolQuestionStore,
} from '../storage/types';
import type { Toolbox } from '../tools/toolbox';
import { PausableTimer } from '../tools/pausable-timer';
import { stopId } from '../contracts/stops';
import type { ToolQuestionAnswer, ToolQuestionRequest } from '../contracts/tool-questions';
import { LegTrace } from '../tracing/run-trace';

/**
 * The local-runtime slots of a run's model calls (models/local-queue.ts), as far as the engine goes: a leg that
 * begins may have a slot taken for its first call while it starts up, and a run that stops here gives back what was
 * kept for its next call before the stop is announced, so that a process that dies once a gate waits holds none.
 */
export interface RunSlots {
  reserve(run: RunRecord): void;
  letGo(runId: string): Promise<void>;
}

/** Slots that keep nothing (no local-runtime queue: the engine's tests). */
export const NO_SLOTS: RunSlots = { reserve: () => undefined, letGo: () => Promise.resolve() };

export interface ExecutionDeps {
  /** This process, as the owner of the runs it executes. */
  owner: string;
  runs: RunStore;
  eventStore: EventStore;
  nodeStore: NodeStore;
  events: EventLog;
  nodes: NodeLog;
  checkpointer: BaseCheckpointSaver;
  models: ModelClient;
  /** Asked before each model call (docs/operations.md#budgets); none: never limited. */
  budgets?: BudgetGuard;
  slots: RunSlots;
  toolbox: Toolbox;
  toolCalls: ToolCallStore;
  /** The record a comparison answers from (docs/compare.md). */
  comparedRuns: ComparedRecordStore;
  questions: ToolQuestionStore;
  /** How long a tool server's question waits for a person (docs/approvals.md#questions-from-tool-servers). */
  questionExpiryS: number;
  agentOf(run: RunRecord): Promise<CatalogEntry | undefined>;
  graphOf(entry: CatalogEntry): CompiledRunGraph;
  projectContext(project: { projectId: string; projectPath: string }, signal: AbortSignal): Promise<string>;
  nodeConfigs(agent: string, projectId: string): Promise<ReadonlyMap<string, NodeConfig>>;
  /** How many legs this process executes at once; the others wait for a place. */
  admission: Admission;
  runTimeoutS: number;
  /** How long the leg's writes wait for the database to come back before the run fails. */
  databaseWaitS: number;
  maxAttempts: number;
  isTransient: IsTransient;
  /** svc.engine: what executions do. */
  log: Logger;
  /** svc.sse: a run's failure, with its traceback (the specification's logger for it). */
  failures: Logger;
  observer?: RunObserver;
  /** Prompts and answers go into the model calls' spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). */
  traceContent: boolean;
}

/** How often a call held for a tool server's question looks for the answer, which any process may take. */
const QUESTION_POLL_MS = 250;

/** A leg waiting for a place hears its position at most this often (and when it is next). */
const ADMISSION_NOTICE_MS = 2000;

/** Why a leg was stopped from outside, when it was. */
export type StopReason = 'cancelled' | 'timeout' | 'shutdown' | 'lost';

/** The gate a checkpoint waits at, from its pending interrupt. */
function interruptedGate(writes: [string, string, unknown][] | undefined): string | null {
  const interrupt = writes?.find(([, channel]) => channel === '__interrupt__')?.[2] as
    { value?: PendingGate }[] | undefined;
  return interrupt?.[0]?.value?.node ?? null;
}

/**
 * One leg of a run in this process: from the moment the run's row is this process's (a start, a fork, a decision,
 * an expiry or a takeover: all the same from here) to the moment it ends, pauses at a gate, or is lost. It plans the
 * leg from the row and the thread's latest checkpoint, runs the graph, and is the one owner of the leg's events.
 */
export class RunExecution {
  readonly controller = new AbortController();
  stopReason?: StopReason;
  private publisher?: LegPublisher;
  private readonly nodes: RunNodes;
  /** The gate this leg resumes with its decision, until that gate's node takes it. */
  private resumeGate: string | null = null;
  /** How the leg ended, once it has: a leg that records no end of its own was interrupted. */
  private outcome: LegOutcome = 'interrupted';
  /** The leg's spans in the run's trace (tracing/run-trace.ts): they record nothing while tracing is off. */
  private readonly trace: LegTrace;
  /** What failed the leg, for its span. */
  private failure?: unknown;
  /** The run's phase configuration, read as the leg begins. */
  private configs?: Promise<ReadonlyMap<string, NodeConfig>>;
  /** RUN_TIMEOUT_S, paused while a person answers a tool server's question. */
  private clock?: PausableTimer;
  /** This process and the run's attempt it executes: the leg's events are stored only while the run is theirs. */
  private readonly holder: LegHolder;
  /** How long a tool server's question waits: the agent's `tools.questions_expire_after`, else the server's. */
  private questionExpiryS: number;

  constructor(
    readonly run: RunRecord,
    private readonly deps: ExecutionDeps,
    /**
     * The run was created with its thread, by this process: its first leg need not look for the thread's latest
     * checkpoint (graph-builder.ts executionConfig). Never set for a leg claimed from the store.
     */
    private readonly threadIsNew = false,
  ) {
    const { observer } = deps;
    this.holder = { owner: deps.owner, attempt: run.attempts };
    this.questionExpiryS = deps.questionExpiryS;
    this.trace = new LegTrace(run, deps.traceContent);
    this.nodes = deps.nodes.forRun(
      run.id,
      deps.databaseWaitS * 1000,
      observer && ((node, status, seconds) => observer.phaseEnded(run.agent, node, status, seconds)),
    );
  }

  /** Stops the leg from outside (a cancel, the clock, a shutdown, or a lease found lost). */
  stop(reason: StopReason, error: Error): void {
    if (this.stopReason) return;
    this.stopReason = reason;
    this.controller.abort(error);
  }

  async execute(): Promise<void> {
    const { deps, run } = this;
    const began = performance.now();
    this.clock = new PausableTimer(deps.runTimeoutS * 1000, () =>
      this.stop('timeout', new TimeoutError(`run exceeded ${deps.runTimeoutS}s`)),
    );
    let leave = () => {};
    // A leg that is not a takeover knows its event ids from its row: it opens before its first read, so the request
    // that started or resumed the run joins it live, rather than reading the store and finding nothing yet.
    if (run.attempts === 1) {
      const reserved = Math.max(run.seqReserved, run.eventSeq + SEQ_BLOCK);
      this.publisher = deps.events.openLeg(run.id, run.eventSeq, reserved, this.holder);
    }
    try {
      const entry = await this.write('reading the agent’s version', () => deps.agentOf(run));
      this.questionExpiryS = entry?.manifest.tools.question_expiry_s ?? deps.questionExpiryS;
      // Read while the checkpoint is, and while LangGraph takes its first steps: only a phase's model call needs them.
      // A leg that begins while the database restarts (a takeover, a queued run) waits for it here as for any read.
      this.configs = this.write('reading the phases’ configuration', () => deps.nodeConfigs(run.agent, run.projectId));
      this.configs.catch(() => undefined);
      // A run's first leg has written no checkpoint yet: the thread's latest is another run's, if any, and the plan
      // is the same without reading it (a decision's leg and a takeover read it).
      const firstLeg = run.attempts === 1 && run.resume === null;
      const latest = firstLeg ? undefined : await this.latestCheckpoint();
      const plan = planLeg(run, latest, { maxAttempts: deps.maxAttempts, agentLoaded: entry !== undefined });
      this.trace.planned(plan.kind);
      await this.open(plan);
      if (plan.kind === 'give_up') throw new RunAbandonedError(plan.reason);
      if (plan.kind === 'resume') this.resumeGate = latest?.gate ?? null;
      // A leg of a run taken over: the process that held its call died, and with it the question's call.
      if (run.attempts > 1) await this.write('withdrawing questions', () => deps.questions.withdrawAll(run.id));
      leave = await this.admit();
      // Once admitted: a leg still waiting for a place would hold a slot it cannot use yet.
      deps.slots.reserve(run);
      await this.runGraph(entry!, plan);
    } catch (error) {
      this.failure = error;
      await this.fail(error);
    } finally {
      leave();
      this.clock.clear();
      this.publisher?.close();
      this.trace.end(this.outcome, this.failure);
      deps.observer?.legEnded(run.agent, this.outcome, (performance.now() - began) / 1000);
    }
  }

  /**
   * A comparison's view of the run it compares, or of an experiment's dataset item, read as its leg begins
   * (docs/compare.md); null for any other run. An item keeps its own copy of its run's record, which outlives the run.
   */
  private compared(): Promise<ComparedRun> | null {
    const { comparisonOf: of, experimentItem: item } = this.run;
    if (!of && !item) return null;
    const store = this.deps.comparedRuns;
    const read = item ? () => store.itemRecordOf(item) : () => store.recordOf(of!);
    // The decisions an item took again name the run it was made from (a typed item has none to take).
    const compared = this.write('reading the run compared', read).then(
      (record) => new ComparedRun(of ?? item!, record),
    );
    // Read beside the leg's first steps; the node that needs it sees a failure.
    compared.catch(() => undefined);
    return compared;
  }

  /** Waits for a place among the legs this process executes at once, telling the stream where it stands. */
  private admit(): Promise<() => void> {
    let told = 0;
    let toldAt = 0;
    return this.deps.admission.enter((position, running) => {
      // Every place gained would be an event per waiter per leg that ends: the stream hears of it every few seconds.
      if (position === told || (position > 1 && performance.now() - toldAt < ADMISSION_NOTICE_MS)) return;
      told = position;
      toldAt = performance.now();
      this.emit({ type: 'server_queue', position, running });
    }, this.controller.signal);
  }

  private async latestCheckpoint(): Promise<(CheckpointSummary & { gate: string | null }) | undefined> {
    const tuple = await this.write('reading the checkpoint', () =>
      this.deps.checkpointer.getTuple({ configurable: { thread_id: this.run.threadId } }),
    );
    if (!tuple) return undefined;
    const values = tuple.checkpoint.channel_values as Partial<RunStateValue>;
    const gate = interruptedGate(tuple.pendingWrites);
    return {
      id: tuple.config.configurable?.checkpoint_id as string,
      runId: values.run_id ?? null,
      interrupted: gate !== null,
      gate,
    };
  }

  /** Opens the leg's events after every id a client may have seen, and sends the event the plan opens with. */
  private async open(plan: LegPlan): Promise<void> {
    const { deps, run } = this;
    if (!this.publisher) {
      // Taken over: the dead process may have handed out ids up to what it reserved, stored or not.
      const stored = await this.write('reading the last event', () => deps.eventStore.lastSeq(run.id));
      const lastSeq = Math.max(run.seqReserved, run.eventSeq, stored);
      const reserved = lastSeq + SEQ_BLOCK;
      await this.write('reserving event ids', () => deps.runs.reserveSeq(run.id, this.holder, reserved));
      this.publisher = deps.events.openLeg(run.id, lastSeq, reserved, this.holder);
    }
    if (plan.opening === 'run_start') {
      this.emit({
        type: 'run_start',
        run_id: run.id,
        thread_id: run.threadId,
        agent: run.agent,
        ...(run.agentVersion ? { agent_version: run.agentVersion } : {}),
        model: run.model,
      });
    } else if (plan.opening === 'run_resumed') {
      const cutOff = await this.write('dropping the cut-off nodes', () => deps.nodeStore.dropRunning(run.id));
      deps.log.warn(
        `run ${run.id} (${run.agent}) taken over after its process stopped (attempt ${run.attempts} of ` +
          `${deps.maxAttempts})${cutOff.length ? `; ${cutOff.join(', ')} runs again` : ''}`,
      );
      this.emit({ type: 'run_resumed', run_id: run.id, attempt: run.attempts, node: cutOff[0] ?? null });
    }
  }

  private async runGraph(entry: CatalogEntry, plan: LegPlan): Promise<void> {
    const { deps, run } = this;
    const signal = this.controller.signal;
    const graph = deps.graphOf(entry);
    const execution: Execution = {
      runId: run.id,
      tenant: run.projectId,
      model: run.model,
      models: this.withinBudget(this.trace.models(deps.models)),
      nodeConfigs: this.configs!,
      hooks: this.hooks,
      threadId: run.threadId,
      // A thread's name is its first message until renamed: a run that started here has not read it back.
      threadName: run.threadName ?? run.message,
      tools: {
        toolbox: deps.toolbox,
        store: deps.toolCalls,
        scope: { projectId: run.projectId, projectPath: run.projectPath },
      },
      comparison: this.compared(),
    };
    let input: Partial<RunStateValue> | Command | null = null;
    let checkpointId: string | undefined;
    const opening = async () =>
      initialState(
        run.id,
        run.message,
        run.projectPath
          ? await deps.projectContext({ projectId: run.projectId, projectPath: run.projectPath }, signal)
          : '',
      );
    if (plan.kind === 'start') {
      input = await opening();
    } else if (plan.kind === 'branch' && plan.from.follows_end) {
      // From where a run ended, the graph starts again with this run's message, as the thread's next run would.
      input = await opening();
      checkpointId = plan.from.checkpoint_id;
    } else if (plan.kind === 'branch') {
      const edits = { runId: run.id, message: run.message, outputs: plan.from.outputs };
      const branch = await writeBranchPoint(graph, entry.layout, run.threadId, plan.from.checkpoint_id, edits);
      checkpointId = branch.configurable.checkpoint_id;
    } else if (plan.kind === 'resume') {
      input = new Command({ resume: plan.resume.decision });
    }
    const config = {
      ...executionConfig(run.threadId, execution, {
        checkpointId,
        threadIsNew: this.threadIsNew && plan.kind === 'start',
      }),
      signal,
      // 'values' hands over the final state as it is produced, saving a checkpoint read at the end.
      streamMode: ['updates', 'values'] as ('updates' | 'values')[],
      recursionLimit: 200,
    };
    let pending: PendingGate | undefined;
    let state: Partial<RunStateValue> | undefined;
    // The leg's opening event and its first statements (its phases' configuration, its queue ticket) leave on the next
    // tick: the pool hands out a connection, and the SSE writer writes, from process.nextTick. LangGraph's start is
    // milliseconds of work in one chain of promises, after which those ticks would run; waiting for a tick here sends
    // them first, so that their answers come back while LangGraph starts (docs/performance.md).
    await new Promise((resolve) => process.nextTick(resolve));
    const stream = (await graph.stream(input as Partial<RunStateValue>, config)) as AsyncIterable<[string, unknown]>;
    for await (const [mode, chunk] of stream) {
      if (mode === 'values') state = chunk as RunStateValue;
      const interrupts = (chunk as { __interrupt__?: { value: PendingGate }[] }).__interrupt__;
      if (mode === 'updates' && interrupts?.[0]) pending = interrupts[0].value;
    }
    signal.throwIfAborted();
    // A leg that finds its graph already ended (taken over just after its last step) streams nothing.
    state ??= (await graph.getState({ configurable: { thread_id: run.threadId } })).values as RunStateValue;
    if (pending) return this.pause(pending);
    await this.nodes.drain();
    await this.letGo();
    const rejected = state.approved === false;
    const output = (state.last_node && state.outputs?.[state.last_node]) || '';
    const reason = rejected ? (state.decision_reason ?? null) : null;
    const ended = await this.publisher!.final(
      rejected ? { type: 'run_rejected', run_id: run.id, reason } : { type: 'run_done', run_id: run.id, output },
      (event) =>
        this.write('finishing the run', () =>
          deps.runs.finish(
            run.id,
            this.holder,
            rejected ? { status: 'rejected', output, endReason: reason } : { status: 'completed', output },
            [event],
          ),
        ),
    );
    if (ended) this.outcome = rejected ? 'rejected' : 'completed';
    else await this.lost();
  }

  private async pause(gate: PendingGate): Promise<void> {
    const { deps, run } = this;
    this.nodes.pauseAt(gate.node);
    await this.nodes.drain();
    await this.letGo();
    const latest = await this.latestCheckpoint();
    const since = new Date();
    const expiresAt = gate.on_expiry ? new Date(since.getTime() + gate.on_expiry.after_s * 1000) : null;
    const waiting = { ...gate, waiting_since: since.toISOString(), expires_at: expiresAt?.toISOString() ?? null };
    const type = gate.tool_call ? ('tool_waiting' as const) : ('gate_waiting' as const);
    const paused = await this.publisher!.final({ type, ...waiting }, (event) =>
      this.write('pausing the run at its gate', () =>
        deps.runs.pause(run.id, this.holder, { gate: waiting, checkpointId: latest?.id ?? null, expiresAt }, [event]),
      ),
    );
    if (paused) this.outcome = 'waiting_approval';
    else await this.lost();
  }

  /**
   * Ends the leg after an error or a stop from outside. A cancel ends the run's stream with run_cancelled (the cancel
   * already set the row); a lost run or a shutdown says nothing (the run goes on elsewhere); anything else fails the
   * run with `<ExceptionClass>: <message>`.
   */
  private async fail(error: unknown): Promise<void> {
    const { deps, run } = this;
    await this.letGo();
    const reason = this.stopReason;
    if (reason === 'lost') return this.lost();
    if (reason === 'shutdown') {
      await this.nodes.drain().catch(() => undefined);
      deps.log.info(`run ${run.id}: stopped by shutdown; it continues elsewhere once its lease lapses`);
      return;
    }
    if (reason === 'cancelled') return this.cancelled();
    const cause = reason ? this.controller.signal.reason : error;
    const detail = errorDetail(cause);
    deps.failures.error(`run ${run.id} (${run.agent}, thread ${run.threadId}) failed: ${detail}`, cause);
    this.publisher ??= deps.events.openLeg(run.id, run.eventSeq, run.seqReserved, this.holder);
    const failed = { type: 'run_error' as const, run_id: run.id, error_detail: detail };
    if (deps.isTransient(cause)) {
      // The database stayed away longer than a run waits for it: nothing can be recorded now. The readers here learn
      // how this leg ended; the run's row stays `running`, and the run is taken over from its last checkpoint (by
      // this process or another) once the database is back: it waits, it is not lost.
      this.publisher.live(failed);
      return;
    }
    this.nodes.closeOpen('error');
    // Stored later if the database is away now (its writes wait), and closed by the run's end if it comes back.
    await this.nodes.drain().catch(() => undefined);
    try {
      const ended = await this.publisher.final(failed, (event) =>
        this.write('recording the failure', () =>
          deps.runs.finish(run.id, this.holder, { status: 'error', errorDetail: detail }, [event]),
        ),
      );
      if (ended) this.outcome = 'error';
      else await this.lost();
    } catch (storeError) {
      // The database went away meanwhile: as above, the readers here learn of the end, the run is taken over later.
      deps.failures.error(`run ${run.id}: could not record its end`, storeError);
      this.publisher.live(failed);
    }
  }

  /**
   * The run's row changed under this leg: it was cancelled at the last moment (its stream then ends with
   * run_cancelled here) or, after a stall, another process took it over (whose stream goes on there).
   */
  private async lost(): Promise<void> {
    const { deps, run } = this;
    const row = await deps.runs.get(run.id).catch(() => undefined);
    if (row?.status === 'cancelled') return this.cancelled();
    deps.log.warn(`run ${run.id}: no longer executed by this process; its execution stops here`);
  }

  /**
   * The run was cancelled (here or through another process), which stored its run_cancelled with its status: the
   * leg closes what it left open and hands that event to its readers here.
   */
  private async cancelled(): Promise<void> {
    const { deps, run } = this;
    this.outcome = 'cancelled';
    this.nodes.closeOpen('cancelled');
    await this.nodes.drain().catch(() => undefined);
    await deps.events.flush();
    const row = await this.write('reading the cancel', () => deps.runs.get(run.id));
    const [event] = row
      ? await this.write('reading the cancel', () => deps.eventStore.after(run.id, row.eventSeq - 1, 1))
      : [];
    if (event) this.publisher?.relay(event);
  }

  /**
   * The run stops running here: the local-runtime slot its last call left for its next one is given back first, so
   * that a process that dies once the stop is announced holds none (a failure to give it back is the queue's to log;
   * the slot then comes back when its lease lapses).
   */
  private letGo(): Promise<void> {
    return this.deps.slots.letGo(this.run.id).catch(() => undefined);
  }

  /**
   * Each model call first asks the run's budgets (docs/operations.md#budgets): a warning reached goes on the stream,
   * and a budget spent ends the run here, after the call before this one, as `BudgetExceeded: …`.
   */
  private withinBudget(client: ModelClient): ModelClient {
    const guard = this.deps.budgets;
    if (!guard) return client;
    const run = { id: this.run.id, projectId: this.run.projectId };
    return {
      stream: async (call) => {
        // A read like any other of the run's: while the database is away the call waits for it instead of failing.
        const verdict = await this.write('checking the budgets', () => guard.beforeCall(run));
        for (const warning of verdict.warnings) this.emit({ type: 'budget_warning', ...warning });
        if (verdict.refusal !== null) throw new BudgetExceeded(verdict.refusal);
        return client.stream(call);
      },
    };
  }

  private emit(event: RunEvent): void {
    this.publisher!.emit(event);
  }

  /** A store write of the engine, tried again while the database is away (it makes the run wait, not fail). */
  private write<T>(what: string, work: () => Promise<T>): Promise<T> {
    return retryTransient(work, {
      isTransient: this.deps.isTransient,
      log: this.deps.log,
      what: `run ${this.run.id}: ${what}`,
      signal: this.controller.signal,
      giveUpAfterMs: this.deps.databaseWaitS * 1000,
    });
  }

  /** What the graph's nodes report, as events and node rows. */
  private readonly hooks: NodeHooks = {
    signal: this.controller.signal,

    enter: async (node, visit, announce = true) => {
      if (announce) this.emit({ type: 'node_enter', node });
      this.nodes.enter(node, visit);
      this.trace.phaseEntered(node, visit);
    },

    token: (node, text) => {
      this.nodes.token(node, text);
      this.emit({ type: 'token', node, text });
    },

    exit: async (node, status: NodeStatus, output) => {
      const figures = this.nodes.figures(node);
      this.emit(figures ? { type: 'node_exit', node, status, ...figures } : { type: 'node_exit', node, status });
      this.nodes.exit(node, status, output);
      this.trace.phaseEnded(status);
    },

    queued: (node: string, info: QueueInfo) => this.emit({ type: 'queue', node, ...info }),

    trimmed: (node: string, report: TrimReport) => this.emit({ type: 'context_trimmed', node, ...report }),

    thinking: (node: string, text: string) => {
      this.nodes.thinking(node, text);
      this.emit({ type: 'thinking', node, text });
    },

    loading: (node: string, info: LoadingInfo) => this.emit({ type: 'model_loading', node, ...info }),
    retrying: (node: string, info: RetryInfo) => this.emit({ type: 'model_retry', node, ...info }),

    warning: (node: string, warning: NodeWarning) => {
      this.nodes.warning(node, warning);
      this.emit({ type: 'node_warning', node, ...warning });
    },

    usage: (node: string, usage: CallUsage) => this.nodes.usage(node, usage),

    routeMatched: async (from: string, to: string, rule: RoutingRule, source: RuleSource) => {
      this.emit({ type: 'route_matched', from, to, rule, source });
      const route = { from, to, rule, source, at: Date.now() / 1000 };
      await this.write('recording the matched route', () => this.deps.runs.addRoute(this.run.id, route));
    },

    takeResume: (gate) => {
      if (this.resumeGate !== gate) return false;
      this.resumeGate = null;
      return true;
    },

    gateDecided: async (gate, visit, decision, inOriginal) => {
      this.emit(decisionEvent(gate, decision, inOriginal));
      this.nodes.gateDecided(gate, visit, decidedNodeStatus(decision));
    },

    record: (what, work) => this.write(what, work),

    traced: (tool, callId, work) => this.trace.toolCall(tool, callId, work),

    event: (event) => this.emit(event),

    decisionFor: (callId) => {
      const decision = this.run.resume?.decision;
      return decision?.call_id === callId ? decision : undefined;
    },

    ask: (call, question, withdrawn) => this.askPerson(call, question, withdrawn),
  };

  /**
   * A tool server's question as a stop (`<run id>:<event id>`, kind `question`): recorded for every process to list
   * and answer, then waited on here, where the call is held, with the leg's time limit paused. Nobody answering in
   * time, the server hears `cancel`; the leg stopping, or the server cancelling its request (`withdrawn`), the question
   * is withdrawn.
   */
  private async askPerson(
    call: { node: string; callId: string; tool: string; server: string },
    question: ToolQuestionRequest,
    withdrawn?: AbortSignal,
  ): Promise<ToolQuestionAnswer> {
    const { deps, run } = this;
    const signal = this.controller.signal;
    const expiresAt = Date.now() + this.questionExpiryS * 1000;
    const record = (waitSeq: number) =>
      this.write('recording a question', () =>
        deps.questions.ask({
          runId: run.id,
          waitSeq,
          node: call.node,
          callId: call.callId,
          tool: call.tool,
          server: call.server,
          mode: question.mode,
          message: question.message,
          requestedSchema: question.requestedSchema,
          url: question.url,
          expiresInS: this.questionExpiryS,
          owner: deps.owner,
        }),
      );
    const asked = await this.publisher!.emitAfter(
      {
        type: 'tool_question',
        node: call.node,
        call_id: call.callId,
        tool: call.tool,
        server: call.server,
        mode: question.mode,
        message: question.message,
        requested_schema: question.requestedSchema,
        url_host: question.url === null ? null : new URL(question.url).host,
        expires_at: new Date(expiresAt).toISOString(),
      },
      record,
    );
    const waitSeq = asked.id;
    const stop = stopId(run.id, waitSeq);
    deps.log.info(`run ${run.id}: ${call.tool} asks a person (stop ${stop})`);
    const resume = this.clock!.pause();
    const answered = (action: RunEventOf<'tool_question_answered'>['action'], by: string | null) =>
      this.emit({ type: 'tool_question_answered', node: call.node, call_id: call.callId, stop_id: stop, action, by });
    // One signal for the whole wait (a question may wait an hour, polled four times a second).
    const waking = withdrawn ? AbortSignal.any([signal, withdrawn]) : signal;
    try {
      for (;;) {
        const answer = await this.write('reading an answer', () => deps.questions.answer(run.id, waitSeq));
        if (answer) {
          answered(answer.action, answer.by);
          return { action: answer.action, ...(answer.content ? { content: answer.content } : {}) };
        }
        if (withdrawn?.aborted) {
          // The server no longer waits for it: taken out of the inbox, or, answered just now, the answer is told.
          if (await this.write('withdrawing a question', () => deps.questions.close(run.id, waitSeq, 'withdrawn'))) {
            answered('withdrawn', null);
          } else {
            const late = await this.write('reading an answer', () => deps.questions.answer(run.id, waitSeq));
            if (late) answered(late.action, late.by);
          }
          return { action: 'cancel' };
        }
        if (
          Date.now() >= expiresAt &&
          (await this.write('expiring a question', () => deps.questions.close(run.id, waitSeq, 'expired')))
        ) {
          answered('expired', null);
          return { action: 'cancel' };
        }
        await sleep(QUESTION_POLL_MS, undefined, { signal: waking }).catch(() => undefined);
        if (signal.aborted) {
          await deps.questions.close(run.id, waitSeq, 'withdrawn').catch(() => undefined);
          throw signal.reason;
        }
      }
    } finally {
      resume();
    }
  }
}
