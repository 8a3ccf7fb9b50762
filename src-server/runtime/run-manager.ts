import { Command } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type { CatalogEntry } from '../assets/catalog';
import type { NodeConfig, PendingGate } from '../contracts/runs';
import type { RunsRepository } from '../db/runs.repository';
import { errorDetail } from '../contracts/errors';
import { getLogger } from '../log';
import { buildGraph, initialState, type GateDecision, type RunStateValue } from './graph-builder';
import type { ModelClient } from '../models/model-client';
import { RunSession } from './run-session';

const sseLog = getLogger('svc.sse');

/** A finished session stays in memory this long so late clients can still re-attach with Last-Event-ID. */
const KEEP_FINISHED_MS = 5 * 60_000;

export interface RunManagerDeps {
  runs: RunsRepository;
  checkpointer: BaseCheckpointSaver;
  models: ModelClient;
  /** Builds the model's project context from a run's project path (local folder or git URL). */
  projectContext(projectPath: string, signal: AbortSignal): Promise<string>;
  /** Saved per-node overrides for an agent, for the organisation the run belongs to. */
  nodeConfigs(agent: string, projectId: string | null): Promise<ReadonlyMap<string, NodeConfig>>;
  runTimeoutS: number;
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

/**
 * Owns runs, independently of the HTTP requests that started them: a client that disconnects does
 * not stop a run; cancel does. Executions live in this process; their state lives in PostgreSQL.
 */
export class RunManager {
  private readonly sessions = new Map<string, RunSession>();
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly deps: RunManagerDeps) {}

  session(runId: string): RunSession | undefined {
    return this.sessions.get(runId);
  }

  /** The run row exists (status running); this starts executing it and returns its live session. */
  start(run: StartRun): RunSession {
    const session = new RunSession(run.runId, run.threadId, run.entry.manifest.name, run.model, 0, this.deps.runs);
    this.sessions.set(run.runId, session);
    session.emit({
      type: 'run_start',
      run_id: run.runId,
      thread_id: run.threadId,
      agent: session.agent,
      model: run.model,
    });
    this.track(
      this.execute(session, run.entry, run.projectId, async (signal) =>
        initialState(run.message, run.projectPath ? await this.deps.projectContext(run.projectPath, signal) : ''),
      ),
    );
    return session;
  }

  /** The gate was claimed (status back to running); this continues the same checkpoint with the decision. */
  resume(run: ResumeRun): RunSession {
    let session = this.sessions.get(run.runId);
    if (!session || !session.isEnded) {
      session = new RunSession(
        run.runId,
        run.threadId,
        run.entry.manifest.name,
        run.model,
        run.eventSeq,
        this.deps.runs,
      );
      this.sessions.set(run.runId, session);
    }
    session.reopen(run.gate.node);
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

  /** Waits for every execution to stop (shutdown); aborts them first. */
  async shutdown(): Promise<void> {
    for (const session of this.sessions.values()) {
      if (!session.isEnded) {
        session.stopReason ??= 'shutdown';
        session.controller.abort(new CancelledError('the server shut down while the run was running'));
      }
    }
    await Promise.allSettled([...this.running]);
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
    input: (signal: AbortSignal) => Promise<Partial<RunStateValue> | Command>,
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
        model: session.model,
        models: this.deps.models,
        nodeConfigs: await this.deps.nodeConfigs(entry.manifest.name, projectId),
        hooks: session.hooks,
        checkpointer: this.deps.checkpointer,
      });
      let pending: PendingGate | undefined;
      let state: Partial<RunStateValue> = {};
      for await (const [mode, chunk] of (await graph.stream(
        (await input(signal)) as Partial<RunStateValue>,
        config,
      )) as AsyncIterable<[string, unknown]>) {
        if (mode === 'values') state = chunk as RunStateValue;
        const interrupts = (chunk as { __interrupt__?: { value: PendingGate }[] }).__interrupt__;
        if (mode === 'updates' && interrupts?.[0]) pending = interrupts[0].value;
      }
      signal.throwIfAborted();

      if (pending) {
        await session.pauseAtGate(pending);
        await session.drain();
        // The database first, then the event: a client that reacts to the event finds the row up to date.
        await runs.pause(session.runId, pending, session.lastEventId + 1);
        session.emit({ type: 'gate_waiting', ...pending });
        return;
      }
      const output = (state.last_node && state.outputs?.[state.last_node]) || '';
      await session.drain();
      if (state.approved === false) {
        await runs.finish(session.runId, 'rejected', { output, eventSeq: session.lastEventId + 1 });
        session.emit({ type: 'run_rejected', run_id: session.runId, reason: null });
      } else {
        await runs.finish(session.runId, 'completed', { output, eventSeq: session.lastEventId + 1 });
        session.emit({ type: 'run_done', run_id: session.runId, output });
      }
    } catch (error) {
      await this.fail(session, error);
    } finally {
      clearTimeout(timeout);
      setTimeout(() => {
        if (this.sessions.get(session.runId) === session && session.isEnded) this.sessions.delete(session.runId);
      }, KEEP_FINISHED_MS).unref();
    }
  }

  /**
   * Ends the run's stream whatever happens to the database: when PostgreSQL is down the row stays
   * `running` and is swept (or cancelled) later, but the client still learns how the run ended.
   */
  private async fail(session: RunSession, error: unknown): Promise<void> {
    const { runs } = this.deps;
    const record = (write: Promise<unknown>) =>
      write.catch((dbError) => sseLog.error(`run ${session.runId}: could not record its end`, dbError));
    if (session.stopReason === 'cancelled') {
      await session.closeOpenNodes('cancelled');
      await session.drain();
      // The cancel request already set the run's status; this only closes what opened since.
      await record(runs.cancel(session.runId, session.lastEventId + 1));
      session.emit({ type: 'run_cancelled', run_id: session.runId, reason: null });
      return;
    }
    const cause = session.stopReason ? session.controller.signal.reason : error;
    const detail = errorDetail(cause);
    sseLog.error(`run ${session.runId} (${session.agent}, thread ${session.threadId}) failed: ${detail}`, cause);
    await session.closeOpenNodes('error');
    await session.drain();
    await record(runs.finish(session.runId, 'error', { errorDetail: detail, eventSeq: session.lastEventId + 1 }));
    session.emit({ type: 'run_error', run_id: session.runId, error_detail: detail });
  }
}
