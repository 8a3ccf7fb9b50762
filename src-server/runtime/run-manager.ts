import { Command } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type { CatalogEntry } from '../assets/catalog';
import { errorDetail, errorMessage } from '../contracts/errors';
import type { NodeConfig, PendingGate } from '../contracts/runs';
import type { RunEventsRepository } from '../db/run-events.repository';
import type { ClaimedRun, Lease, RunsRepository } from '../db/runs.repository';
import type { ExpiredGate, GateDecisionsRepository } from '../db/gate-decisions.repository';
import { getLogger } from '../log';
import type { ModelClient } from '../models/model-client';
import type { RunEventStream } from './event-stream';
import { writeBranchPoint, type BranchEdits } from './checkpoints';
import {
  buildGraph,
  initialState,
  type CompiledRunGraph,
  type GateDecision,
  type RunStateValue,
} from './graph-builder';
import { RunSession, SEQ_BLOCK, type SessionOptions } from './run-session';

const sseLog = getLogger('svc.sse');
const log = getLogger('svc.api');

export interface RunManagerDeps {
  /** This process, as the owner of the runs it executes (and of its queue tickets). */
  owner: string;
  runs: RunsRepository;
  gates: GateDecisionsRepository;
  runEvents: RunEventsRepository;
  events: RunEventStream;
  checkpointer: BaseCheckpointSaver;
  models: ModelClient;
  /** The agent or command a run executes (a run taken over names it by its agent). */
  catalogEntry(agent: string): CatalogEntry | undefined;
  /** Builds the model's project context from a run's project path (local folder or git URL). */
  projectContext(projectPath: string, signal: AbortSignal): Promise<string>;
  /** Saved per-node overrides for an agent, for the organisation the run belongs to. */
  nodeConfigs(agent: string, projectId: string | null): Promise<ReadonlyMap<string, NodeConfig>>;
  runTimeoutS: number;
  /** How long a lease lasts unless renewed; renewed and looked for lapsed ones every quarter of it. */
  leaseS: number;
  /** Executions of one run (the first included) before it is given up. */
  maxAttempts: number;
}

export interface StartRun {
  entry: CatalogEntry;
  runId: string;
  threadId: string;
  projectId: string | null;
  model: string;
  message: string;
  projectPath: string | null;
}

/** A run on a branch: it continues a thread from one of its checkpoints, with edits (see runs.service forkRun). */
export interface ForkRun extends StartRun {
  checkpointId: string;
  outputs: Record<string, string>;
}

export interface ResumeRun {
  entry: CatalogEntry;
  runId: string;
  threadId: string;
  projectId: string | null;
  model: string;
  gate: PendingGate;
  decision: GateDecision;
  eventSeq: number;
}

export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** Named after the documented CancelledError: the run was cut off, not cancelled by a person. */
export class CancelledError extends Error {
  override name = 'CancelledError';
}

/** A run whose executing process kept dying. */
export class RunAbandonedError extends Error {
  override name = 'RunAbandonedError';
}

/** Where a branch run's graph continues: its branch point, written before its first step. */
class BranchStart {
  constructor(readonly config: { configurable: { thread_id: string; checkpoint_id: string } }) {}
}

type Input = Partial<RunStateValue> | Command | BranchStart | null;

/** The gate a checkpoint is paused at, from its pending interrupt. */
function pendingGateOf(writes: [string, string, unknown][] | undefined): string | undefined {
  const interrupt = writes?.find(([, channel]) => channel === '__interrupt__')?.[2] as
    { value?: PendingGate }[] | undefined;
  return interrupt?.[0]?.value?.node;
}

/**
 * Schedules and supervises the runs this process executes. A run belongs to the cluster, not to this
 * process: its events go to the stored event stream, and this process holds a lease on it that it renews.
 * When a process dies, its leases lapse and a live process (this one, or the same one restarted) claims
 * each run — one conditional UPDATE, so exactly one claimer — and continues it from its last LangGraph
 * checkpoint. A client that disconnects does not stop a run; cancel does.
 */
export class RunManager {
  readonly owner: string;
  private readonly sessions = new Map<string, RunSession>();
  /** The order sessions were registered in: which ones a lease renewal's answer can speak for (superviseOnce). */
  private readonly registered = new WeakMap<RunSession, number>();
  private registrations = 0;
  private readonly running = new Set<Promise<void>>();
  private leaseTimer?: NodeJS.Timeout;
  private supervising?: Promise<void>;
  private stopped = false;

  constructor(private readonly deps: RunManagerDeps) {
    this.owner = deps.owner;
  }

  get lease(): Lease {
    return { owner: this.owner, leaseS: this.deps.leaseS };
  }

  /** Starts renewing this process's leases and taking over lapsed runs, at once and then periodically. */
  supervise(): void {
    const tick = () => {
      if (this.stopped || this.supervising) return;
      this.supervising = this.superviseOnce().finally(() => {
        this.supervising = undefined;
      });
    };
    this.leaseTimer = setInterval(tick, (this.deps.leaseS * 1000) / 4);
    this.leaseTimer.unref();
    tick();
  }

  /** The run row exists (status running, leased to this process); this starts executing it. */
  start(run: StartRun): RunSession {
    const session = this.session({ ...run, agent: run.entry.manifest.name, lastSeq: 0, reserved: SEQ_BLOCK });
    session.emit({
      type: 'run_start',
      run_id: run.runId,
      thread_id: run.threadId,
      agent: session.agent,
      model: run.model,
    });
    this.track(
      this.execute(session, run.entry, run.projectId, async (signal) =>
        initialState(
          run.runId,
          run.message,
          run.projectPath ? await this.deps.projectContext(run.projectPath, signal) : '',
        ),
      ),
    );
    return session;
  }

  /**
   * The run row exists (status running, leased here, `forked_from` set); this writes its branch point from the
   * checkpoint with the edits and continues the thread's graph from there.
   */
  fork(run: ForkRun): RunSession {
    const session = this.session({ ...run, agent: run.entry.manifest.name, lastSeq: 0, reserved: SEQ_BLOCK });
    session.emit({
      type: 'run_start',
      run_id: run.runId,
      thread_id: run.threadId,
      agent: session.agent,
      model: run.model,
    });
    const edits = { runId: run.runId, message: run.message, outputs: run.outputs };
    this.track(
      this.execute(session, run.entry, run.projectId, async (_signal, graph) =>
        branchStart(graph, run.entry, run.threadId, run.checkpointId, edits),
      ),
    );
    return session;
  }

  /** The gate was claimed (status back to running, leased here); this continues its checkpoint with the decision. */
  resume(run: ResumeRun): RunSession {
    const session = this.session({
      ...run,
      agent: run.entry.manifest.name,
      lastSeq: run.eventSeq,
      reserved: run.eventSeq + SEQ_BLOCK,
      resumeGate: run.gate.node,
    });
    this.track(this.execute(session, run.entry, run.projectId, async () => new Command({ resume: run.decision })));
    return session;
  }

  /** Stops a live execution in this process; the database change is the caller's (see runs.service). */
  abort(runId: string): void {
    const session = this.sessions.get(runId);
    if (!session || session.isEnded) return;
    session.stopReason ??= 'cancelled';
    session.controller.abort(new Error('run cancelled'));
  }

  /** Whether the thread's checkpoint still holds a paused gate (false when the checkpoint is gone). */
  async hasPendingInterrupt(threadId: string): Promise<boolean> {
    const tuple = await this.deps.checkpointer.getTuple({ configurable: { thread_id: threadId } });
    return Boolean(tuple?.pendingWrites?.some(([, channel]) => channel === '__interrupt__'));
  }

  /**
   * Waits for every execution to stop (shutdown); aborts them first. A process that shuts down mid-run
   * hands its runs over to the others (or to itself, restarted), as one that dies does, but at once.
   */
  async shutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.leaseTimer);
    await this.supervising;
    for (const session of this.sessions.values()) {
      if (!session.isEnded) {
        session.stopReason ??= 'shutdown';
        session.controller.abort(new CancelledError('the server shut down while the run was running'));
      }
    }
    await Promise.allSettled([...this.running]);
    // Handed over at once rather than when the lease would lapse.
    await this.deps.runs.releaseLeases(this.owner).catch(() => undefined);
  }

  private session(options: Omit<SessionOptions, 'owner' | 'runs' | 'events'>): RunSession {
    const session = new RunSession({
      ...options,
      owner: this.owner,
      runs: this.deps.runs,
      events: this.deps.events,
    });
    this.sessions.set(options.runId, session);
    this.registered.set(session, ++this.registrations);
    return session;
  }

  private async superviseOnce(): Promise<void> {
    const { runs } = this.deps;
    try {
      // A run's row is written (inserted, or claimed at a gate) before its session is registered here. So the
      // renewal's answer covers the sessions registered before it was sent; a session registered since may belong to
      // a row the renewal's snapshot did not see yet, and is not ours to stop.
      const covered = this.registrations;
      const ours = new Set(await runs.renewLeases(this.lease));
      for (const session of this.sessions.values()) {
        if ((this.registered.get(session) ?? 0) > covered) continue;
        if (!session.isEnded && !ours.has(session.runId) && !session.stopReason) {
          // Cancelled (the NOTIFY may have been missed) or taken over after a stall: stop quietly.
          session.stopReason = 'lost';
          session.controller.abort(new CancelledError('the run is no longer executed by this process'));
        }
      }
      for (let claimed = await runs.claimLapsed(this.lease); claimed; claimed = await runs.claimLapsed(this.lease)) {
        await this.takeOver(claimed);
        if (this.stopped) return;
      }
      const { gates } = this.deps;
      for (
        let expired = await gates.claimExpired(this.lease, SEQ_BLOCK);
        expired;
        expired = await gates.claimExpired(this.lease, SEQ_BLOCK)
      ) {
        this.expire(expired);
        if (this.stopped) return;
      }
    } catch (error) {
      log.warn(`renewing run leases failed: ${errorMessage(error)}`);
    }
  }

  /** A gate nobody decided in time, claimed by this process: the run resumes with what its expiry does. */
  private expire(gate: ExpiredGate): void {
    const entry = this.deps.catalogEntry(gate.agent);
    log.info(
      `gate ${gate.gate.node} expired thread=${gate.threadId} run=${gate.runId}: ${gate.resume.outcome}` +
        (gate.resume.to ? ` → ${gate.resume.to}` : ''),
    );
    const session = this.session({
      runId: gate.runId,
      threadId: gate.threadId,
      agent: gate.agent,
      model: gate.model ?? '',
      lastSeq: gate.eventSeq,
      reserved: gate.eventSeq + SEQ_BLOCK,
      resumeGate: gate.gate.node,
    });
    if (!entry) {
      this.track(this.fail(session, new RunAbandonedError(`no agent or command named "${gate.agent}" is loaded`)));
      return;
    }
    this.track(this.execute(session, entry, gate.projectId, async () => new Command({ resume: gate.resume })));
  }

  /** Continues a run whose process died, from its last checkpoint, after every id its clients could have seen. */
  private async takeOver(run: ClaimedRun): Promise<void> {
    const { runs, runEvents } = this.deps;
    const lastSeq = Math.max(run.seq_reserved, run.event_seq, await runEvents.lastSeq(run.id));
    await runs.reserveSeq(run.id, this.owner, lastSeq + SEQ_BLOCK);
    const entry = this.deps.catalogEntry(run.agent);
    const tuple = await this.deps.checkpointer.getTuple({ configurable: { thread_id: run.thread_id } });
    const values = tuple?.checkpoint.channel_values as Partial<RunStateValue> | undefined;
    const ofThisRun = values?.run_id === run.id;
    // Died right after a gate decision, before the resumed graph wrote a checkpoint: resume the same decision.
    const pausedAt = ofThisRun && run.resume_decision ? pendingGateOf(tuple?.pendingWrites) : undefined;
    const session = this.session({
      runId: run.id,
      threadId: run.thread_id,
      agent: run.agent,
      model: run.model ?? '',
      lastSeq,
      reserved: lastSeq + SEQ_BLOCK,
      resumeGate: pausedAt,
    });
    if (!entry || run.attempts > this.deps.maxAttempts) {
      const why = entry
        ? `its server process stopped ${run.attempts - 1} times while running it; given up`
        : `no agent or command named "${run.agent}" is loaded to continue it`;
      await this.fail(session, new RunAbandonedError(why));
      return;
    }
    const cutOff = await runs.dropOpenNodes(run.id);
    log.warn(
      `run ${run.id} (${run.agent}) taken over after its process stopped (attempt ${run.attempts} of ` +
        `${this.deps.maxAttempts})${cutOff.length ? `; ${cutOff.join(', ')} runs again` : ''}`,
    );
    session.emit({ type: 'run_resumed', run_id: run.id, attempt: run.attempts, node: cutOff[0] ?? null });
    const fork = ofThisRun ? undefined : await runs.forkOf(run.id);
    const input = async (signal: AbortSignal, graph: CompiledRunGraph): Promise<Input> => {
      if (fork) {
        // A branch run that died before its branch point was written: write it now.
        const edits = { runId: run.id, message: run.message ?? '', outputs: fork.outputs };
        return branchStart(graph, entry, run.thread_id, fork.checkpoint_id, edits);
      }
      if (!ofThisRun) {
        // The process died before the run's first checkpoint: start it again from its request.
        const context = run.project_path ? await this.deps.projectContext(run.project_path, signal) : '';
        return initialState(run.id, run.message ?? '', context);
      }
      if (pausedAt && run.resume_decision) return new Command({ resume: run.resume_decision });
      return null;
    };
    this.track(this.execute(session, entry, run.project_id, input));
  }

  private track(execution: Promise<void>): void {
    const tracked = execution.catch((error) => sseLog.error('run execution failed unexpectedly', error));
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
  }

  private async execute(
    session: RunSession,
    entry: CatalogEntry,
    projectId: string | null,
    input: (signal: AbortSignal, graph: CompiledRunGraph) => Promise<Input>,
  ): Promise<void> {
    const { runs } = this.deps;
    const timeout = setTimeout(() => {
      session.stopReason ??= 'timeout';
      session.controller.abort(new TimeoutError(`run exceeded ${this.deps.runTimeoutS}s`));
    }, this.deps.runTimeoutS * 1000);
    const signal = session.controller.signal;
    // 'values' hands over the final state as it is produced, saving a checkpoint read at the end.
    const config = {
      configurable: { thread_id: session.threadId },
      signal,
      streamMode: ['updates', 'values'] as ('updates' | 'values')[],
      recursionLimit: 200,
    };

    try {
      const graph = buildGraph({
        entry,
        runId: session.runId,
        tenant: projectId ?? '',
        model: session.model,
        models: this.deps.models,
        nodeConfigs: await this.deps.nodeConfigs(entry.manifest.name, projectId),
        hooks: session.hooks,
        checkpointer: this.deps.checkpointer,
      });
      let pending: PendingGate | undefined;
      let state: Partial<RunStateValue> | undefined;
      const first = await input(signal, graph);
      // A branch continues from its branch point; everything else from the thread's latest checkpoint.
      const from = first instanceof BranchStart ? { ...config, configurable: first.config.configurable } : config;
      const start = first instanceof BranchStart ? null : first;
      const stream = (await graph.stream(start as Partial<RunStateValue>, from)) as AsyncIterable<[string, unknown]>;
      for await (const [mode, chunk] of stream) {
        if (mode === 'values') state = chunk as RunStateValue;
        const interrupts = (chunk as { __interrupt__?: { value: PendingGate }[] }).__interrupt__;
        if (mode === 'updates' && interrupts?.[0]) pending = interrupts[0].value;
      }
      signal.throwIfAborted();
      // A run taken over after its graph had already finished streams nothing more: read where it ended.
      state ??= (await graph.getState(config)).values as RunStateValue;

      if (pending) {
        await session.pauseAtGate(pending);
        await session.drain();
        if (session.writeFailure) throw session.writeFailure;
        const since = new Date();
        const expires = pending.on_expiry ? new Date(since.getTime() + pending.on_expiry.after_s * 1000) : null;
        const waiting = { ...pending, waiting_since: since.toISOString(), expires_at: expires?.toISOString() ?? null };
        // The database first, then the event: a client that reacts to the event finds the row up to date.
        if (!(await runs.pause(session.runId, this.owner, waiting, session.lastEventId + 1, since, expires))) {
          return await this.lost(session);
        }
        session.emit({ type: 'gate_waiting', ...waiting });
        return;
      }
      const output = (state.last_node && state.outputs?.[state.last_node]) || '';
      await session.drain();
      // Rows that did not reach the database would contradict a run reported as done.
      if (session.writeFailure) throw session.writeFailure;
      const status = state.approved === false ? 'rejected' : 'completed';
      // A checkpoint written before reasons were kept has no decision_reason.
      const reason = status === 'rejected' ? (state.decision_reason ?? null) : null;
      const fields = { output, endReason: reason, eventSeq: session.lastEventId + 1 };
      if (!(await runs.finish(session.runId, this.owner, status, fields))) return await this.lost(session);
      if (status === 'rejected') session.emit({ type: 'run_rejected', run_id: session.runId, reason });
      else session.emit({ type: 'run_done', run_id: session.runId, output });
    } catch (error) {
      await this.fail(session, error);
    } finally {
      clearTimeout(timeout);
      // Lost or shut down: its followers here go on from the store, wherever the run continues.
      if (!session.isEnded) this.deps.events.abandon(session.runId);
      await this.deps.events.flush();
      if (this.sessions.get(session.runId) === session) this.sessions.delete(session.runId);
    }
  }

  /**
   * The run's row changed under this execution: it was cancelled at the last moment (its stream then ends
   * with run_cancelled here) or, after a stall, another process took it over (whose stream goes on there).
   */
  private async lost(session: RunSession): Promise<void> {
    const run = await this.deps.runs.get(session.runId).catch(() => undefined);
    if (run?.status === 'cancelled') {
      session.emit({ type: 'run_cancelled', run_id: session.runId, reason: run.end_reason });
      return;
    }
    log.warn(`run ${session.runId}: no longer executed by this process; its execution stops here`);
  }

  /**
   * Ends the run's stream whatever happens to the database: when PostgreSQL is down the row stays
   * `running` and is taken over (or cancelled) later, but the client still learns how the run ended.
   */
  private async fail(session: RunSession, error: unknown): Promise<void> {
    const { runs } = this.deps;
    const record = (write: Promise<unknown>) =>
      write.catch((dbError) => sseLog.error(`run ${session.runId}: could not record its end`, dbError));
    if (session.stopReason === 'lost') return await this.lost(session);
    if (session.stopReason === 'shutdown') {
      // Another process (or this one, restarted) takes the run over once its lease lapses.
      await session.drain();
      sseLog.info(`run ${session.runId}: stopped by shutdown; it continues elsewhere once its lease lapses`);
      return;
    }
    if (session.stopReason === 'cancelled') {
      await session.closeOpenNodes('cancelled');
      await session.drain();
      // The cancel (asked here or of another process) already set the status; its reason comes from that row.
      const run = await runs.get(session.runId).catch(() => undefined);
      session.emit({ type: 'run_cancelled', run_id: session.runId, reason: run?.end_reason ?? null });
      return;
    }
    const cause = session.stopReason ? session.controller.signal.reason : error;
    const detail = errorDetail(cause);
    sseLog.error(`run ${session.runId} (${session.agent}, thread ${session.threadId}) failed: ${detail}`, cause);
    await session.closeOpenNodes('error');
    await session.drain();
    await record(
      runs.finish(session.runId, this.owner, 'error', { errorDetail: detail, eventSeq: session.lastEventId + 1 }),
    );
    session.emit({ type: 'run_error', run_id: session.runId, error_detail: detail });
  }
}

async function branchStart(
  graph: CompiledRunGraph,
  entry: CatalogEntry,
  threadId: string,
  checkpointId: string,
  edits: BranchEdits,
): Promise<BranchStart> {
  return new BranchStart(await writeBranchPoint(graph, entry.layout, threadId, checkpointId, edits));
}
