import { randomUUID } from 'node:crypto';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { runAccepted, type ForkRequest, type RunAccepted, type RunDetail, type RunRequest } from '../contracts/runs';
import type { CompareRequest } from '../contracts/comparisons';
import { stopOf } from '../contracts/stops';
import type { ToolQuestionsRepository } from '../db/tool-questions.repository';
import { openQuestionOf } from './open-questions';
import type { StopDeliveriesRepository } from '../db/stop-deliveries.repository';
import type { GateDecisionsRepository } from '../db/gate-decisions.repository';
import type { RunsRepository, StoredRun } from '../db/runs.repository';
import { badRequest, conflict, notFound, ServiceError, tooManyRequests } from '../contracts/errors';
import { importedThreadConflict } from '../contracts/thread-transfer';
import type { Engine, LoggedEvent, RunStart } from '../engine';
import { getLogger } from '../log';
import { parseModel } from '../models/model-ref';
import { startRunTrace } from '../tracing/run-trace';
import type { AgentDirectory, ResolvedAgent } from './agent-directory';
import type { ThreadsService } from './threads.service';
import type { BudgetsService } from './budgets.service';
import type { UsageService } from './usage.service';

const log = getLogger('svc.api');

/** A thread runs one run at a time: the 409 for a request that would start a second. */
function activeRunConflict(threadId: string, active: { id: string; status: string }) {
  return conflict(
    active.status === 'waiting_approval'
      ? `thread ${threadId} has run ${active.id} waiting for approval: approve, reject or cancel it first`
      : active.status === 'queued'
        ? `thread ${threadId} already has run ${active.id} queued`
        : `thread ${threadId} already has run ${active.id} running`,
  );
}

/** Why a `rollback` cannot remove the thread's active run: what it did cannot be taken back. */
function notRollbackable(active: { id: string }, why: 'decision' | 'tool_call') {
  return conflict(
    why === 'decision'
      ? `run ${active.id} cannot be rolled back: a person decided at one of its stops; use interrupt to keep it`
      : `run ${active.id} cannot be rolled back: one of its tool calls ran; use interrupt to keep it`,
  );
}

export interface RunsServiceDeps {
  agents: Pick<AgentDirectory, 'forProject' | 'pinnedEntry' | 'versionOf'>;
  access: Access;
  threads: ThreadsService;
  runs: RunsRepository;
  gates: GateDecisionsRepository;
  /** Where a waiting stop was sent (Slack), and how that went. */
  notices: Pick<StopDeliveriesRepository, 'noticesOf'>;
  /** The questions a run's tool servers ask a person while it runs. */
  questions: Pick<ToolQuestionsRepository, 'waiting'>;
  engine: Engine;
  /** A run's tokens, cost and time, for those who may see its spend. */
  usage: Pick<UsageService, 'forRun'>;
  /** The model a run uses when neither it nor its thread names one (services/default-model.ts). */
  defaultModel(): string;
  /** Throws when the model's provider is not configured, before any run is created. */
  checkModel(model: string): void;
  /** Local-runtime runs one user may have going at once (see LOCAL_LLM_MAX_RUNS_PER_USER). */
  maxLocalRunsPerUser: number;
  /** Refuses a run while a budget it would count against is spent (docs/operations.md#budgets). */
  budgets: Pick<BudgetsService, 'admit'>;
  /** Seconds until the local runtime is likely to have room again: the Retry-After of a refused run. */
  localRetryAfterS(): Promise<number>;
  /** Throws (400) when the caller may not give a run of this project this path, before anything is stored. */
  checkProjectPath(principal: Principal, projectPath: string, projectId: string): Promise<void>;
}

/** A run a client may follow, wherever it executes: its events after an id, live, to the end or a gate. */
export interface FollowableRun {
  runId: string;
  threadId: string;
  /** The last event before this request's part of the run (0 for a new run; the gate's for a decision). */
  since: number;
  /** `queued`: the run waits in its thread's line (multitask_strategy `enqueue`). */
  status: 'running' | 'queued';
  /** The run's events after `afterId`, in batches, to its end or the gate it waits at. */
  events(afterId: number, signal: AbortSignal): AsyncIterable<LoggedEvent[]>;
}

/**
 * Runs: the rules (who may do what, which moves are allowed) on top of the run engine, which executes them, and the
 * repositories, which show them. Every method receives the caller.
 */
export function runsService(deps: RunsServiceDeps) {
  const { access, runs, engine, agents } = deps;

  /** What a run records of its agent, to resume on it whatever is published after it starts. */
  const pinnedTo = (agent: ResolvedAgent) => ({ agentVersion: agent.version, manifestHash: agent.hash, draft: false });

  /** What `name` means for a run in the project: a built-in, or a stored agent the project may use. */
  async function agentFor(projectId: string, name: string): Promise<ResolvedAgent> {
    const agent = await agents.forProject(projectId, name);
    if (!agent) throw notFound(`no agent or command named "${name}"`);
    return agent;
  }

  async function visibleRun(
    principal: Principal,
    id: string,
    role: 'viewer' | 'member' = 'viewer',
  ): Promise<StoredRun> {
    const run = await runs.detail(id);
    if (!run) throw notFound(`run ${id} not found`);
    await access.requireProjectRole(principal, run.project_id, role, `run ${id}`);
    return run;
  }

  /**
   * Writes the run's row (and a new thread's), answering why not when it cannot start: the thread has an active run
   * (409), or a local model would take the caller past her share of the runtime (429). Both are checked where the row
   * is written, under locks, so a burst of requests across processes cannot pass a check taken before the others.
   */
  async function admit(
    principal: Principal,
    run: Omit<RunStart, 'localRuntime' | 'localCap' | 'createdBy' | 'traceContext'>,
    traceparent: string | undefined,
  ): Promise<'running' | 'queued'> {
    deps.checkModel(run.model);
    await deps.budgets.admit(run.projectId, principal.id);
    const localRuntime = parseModel(run.model).provider === 'local';
    const started = await engine.start({
      ...run,
      createdBy: principal.id,
      localRuntime,
      localCap: deps.maxLocalRunsPerUser,
      // The run's trace begins here, under the request's own when it sent one (a refused run leaves a short trace).
      traceContext: startRunTrace(run, traceparent),
    });
    if (started.outcome === 'queued') return 'queued';
    if (started.outcome === 'active') throw activeRunConflict(run.threadId, started.active);
    if (started.outcome === 'not_rollbackable') throw notRollbackable(started.active, started.why);
    if (started.outcome === 'over_limit') {
      throw tooManyRequests(
        `you have ${started.going} runs on the local runtime already (at most ${deps.maxLocalRunsPerUser} at once): ` +
          'wait for one to finish, or use a cloud model',
        await deps.localRetryAfterS(),
      );
    }
    return 'running';
  }

  /**
   * A folder a thread or a run stored is checked as a new run's is, with this caller's rights and for the thread's
   * project as it stands now: a member cannot work in a folder an administrator named, nor an organisation in one
   * that is no longer its own. The refusal says where the folder came from.
   */
  async function checkStoredPath(
    principal: Principal,
    thread: { id: string; project_id: string; project_path: string | null },
    projectPath = thread.project_path,
  ): Promise<void> {
    if (!projectPath) return;
    try {
      await deps.checkProjectPath(principal, projectPath, thread.project_id);
    } catch (error) {
      if (!(error instanceof ServiceError) || error.status !== 400) throw error;
      throw badRequest(`thread ${thread.id} works in a folder this run may not use: ${error.message}`);
    }
  }

  /** A run of an imported thread is history (docs/http-api.md#export-and-import-of-a-thread): 409. */
  async function refuseImported(principal: Principal, threadId: string): Promise<void> {
    const thread = await deps.threads.visible(principal, threadId, 'viewer');
    if (thread.imported) throw importedThreadConflict(thread.id);
  }

  const followable = (
    runId: string,
    threadId: string,
    since: number,
    status: 'running' | 'queued' = 'running',
  ): FollowableRun => ({
    runId,
    threadId,
    since,
    status,
    events: (afterId, signal) => engine.join(runId, afterId, signal),
  });

  return {
    /**
     * `traceparent`: the W3C trace context the request came with; the run's trace continues it. `newThreadId`: the id
     * the run's new thread gets (a thread the LangGraph API promised before its first run named its agent). `runId`:
     * the run's id, chosen by a caller that must never start it twice (a schedule's fire): a second start fails.
     */
    async startRun(
      principal: Principal,
      agent: string,
      request: RunRequest,
      traceparent?: string,
      newThreadId?: string,
      runId: string = randomUUID(),
    ): Promise<FollowableRun> {
      const strategy = request.multitask_strategy ?? 'reject';
      let run: Parameters<typeof admit>[1];
      let projectId: string;
      let resolved: ResolvedAgent;
      if (request.thread_id) {
        const thread = await deps.threads.visible(principal, request.thread_id, 'member');
        if (thread.imported) throw importedThreadConflict(thread.id);
        projectId = thread.project_id;
        resolved = await agentFor(projectId, agent);
        const entry = resolved.entry;
        // The thread's project rules; a project_id given as well must be that one.
        if (request.project_id && request.project_id !== projectId) {
          throw badRequest(
            `invalid request body: project_id: thread ${thread.id} belongs to another project; leave project_id out`,
          );
        }
        if (thread.agent !== entry.manifest.name) {
          throw conflict(`thread ${thread.id} belongs to "${thread.agent}", not "${entry.manifest.name}"`);
        }
        // Most callers learn of an active run here; the row's insert checks again, under the thread's lock.
        if (strategy === 'reject') {
          const active = await runs.activeInThread(thread.id);
          if (active) throw activeRunConflict(thread.id, active);
        }
        const projectPath = request.project_path ?? thread.project_path;
        if (request.project_path) await deps.checkProjectPath(principal, request.project_path, projectId);
        else await checkStoredPath(principal, thread);
        const model = request.model ?? thread.model ?? deps.defaultModel();
        run = {
          id: runId,
          threadId: thread.id,
          projectId,
          newThread: null,
          forkedFrom: null,
          agent: entry.manifest.name,
          ...pinnedTo(resolved),
          model,
          message: request.message,
          projectPath,
          strategy,
          comparisonOf: null,
          experimentItem: null,
        };
      } else {
        projectId = await access.resolveProject(principal, request.project_id, 'member');
        resolved = await agentFor(projectId, agent);
        if (request.project_path) await deps.checkProjectPath(principal, request.project_path, projectId);
        const model = request.model ?? deps.defaultModel();
        // A refused run leaves no empty thread behind: the thread is written with the run, or not at all.
        run = {
          id: runId,
          threadId: newThreadId ?? randomUUID(),
          projectId,
          newThread: { projectId },
          forkedFrom: null,
          agent: resolved.entry.manifest.name,
          ...pinnedTo(resolved),
          model,
          message: request.message,
          projectPath: request.project_path ?? null,
          strategy,
          comparisonOf: null,
          experimentItem: null,
        };
      }
      // The start line first: the run may log its first steps as soon as it is admitted.
      log.info(
        `graph run start agent=${run.agent} model=${run.model} thread=${run.threadId} run=${runId} ` +
          `user=${principal.name} version=${run.agentVersion}`,
      );
      const status = await admit(principal, run, traceparent);
      if (status === 'queued') log.info(`run ${runId} queued in thread ${run.threadId}`);
      return followable(runId, run.threadId, 0, status);
    },

    /**
     * A try of an unsaved agent source (already compiled and recorded under its hash), in a new thread of the project
     * flagged as a draft: left out of the default thread list, counted in usage as any run.
     */
    async startDraft(
      principal: Principal,
      projectId: string,
      pinned: { hash: string; manifest: { name: string } },
      request: { message: string; model?: string; project_path?: string },
    ): Promise<FollowableRun> {
      if (request.project_path) await deps.checkProjectPath(principal, request.project_path, projectId);
      const run = {
        id: randomUUID(),
        threadId: randomUUID(),
        projectId,
        newThread: { projectId },
        forkedFrom: null,
        agent: pinned.manifest.name,
        agentVersion: `draft-${pinned.hash.slice(0, 12)}`,
        manifestHash: pinned.hash,
        draft: true,
        model: request.model ?? deps.defaultModel(),
        message: request.message,
        projectPath: request.project_path ?? null,
        strategy: 'reject' as const,
        comparisonOf: null,
        experimentItem: null,
      };
      log.info(
        `graph run start agent=${run.agent} model=${run.model} thread=${run.threadId} run=${run.id} ` +
          `user=${principal.name} version=${run.agentVersion}`,
      );
      await admit(principal, run, undefined);
      return followable(run.id, run.threadId, 0);
    },

    /**
     * A new run on the thread that continues from one of its checkpoints (a branch), with the message, the model
     * or earlier phases' outputs edited. The runs and checkpoints before it are left as they are.
     */
    async forkRun(
      principal: Principal,
      threadId: string,
      checkpointId: string,
      request: ForkRequest,
      traceparent?: string,
    ): Promise<FollowableRun> {
      const thread = await deps.threads.visible(principal, threadId, 'member');
      if (thread.imported) throw importedThreadConflict(thread.id);
      const current = await agentFor(thread.project_id, thread.agent);
      const checkpoint = await deps.threads.checkpointOf(thread, checkpointId);
      const outputs = request.outputs ?? {};
      // Where a run ended, or at the thread's start, a new message starts a run that follows it (an earlier message,
      // edited); nothing else runs there.
      const followsEnd = checkpoint.next.length === 0 || checkpoint.source === 'input';
      if (followsEnd && request.message === undefined) {
        throw badRequest(
          `checkpoint ${checkpointId} is where a run ended: nothing runs after it; send a message, or fork an earlier one`,
        );
      }
      if (followsEnd && Object.keys(outputs).length) {
        throw badRequest(
          `invalid request body: outputs: checkpoint ${checkpointId} is where a run ended; a run from it starts ` +
            'with its message, and no phase after it reads an edited output',
          { fields: Object.keys(outputs).map((node) => ({ field: `outputs.${node}`, message: 'nothing reads it' })) },
        );
      }
      const unknown = Object.keys(outputs).filter((node) => !Object.hasOwn(checkpoint.state.outputs, node));
      if (unknown.length) {
        const done = Object.keys(checkpoint.state.outputs);
        throw badRequest(
          `invalid request body: outputs: ${unknown.map((n) => `"${n}"`).join(', ')} had no output at checkpoint ` +
            `${checkpointId} (phases completed there: ${done.length ? done.join(', ') : 'none'})`,
          { fields: unknown.map((node) => ({ field: `outputs.${node}`, message: 'no output at this checkpoint' })) },
        );
      }
      const source = checkpoint.run_id ? await runs.detail(checkpoint.run_id) : undefined;
      const model = request.model ?? source?.model ?? thread.model ?? deps.defaultModel();
      const message = request.message ?? checkpoint.state.message ?? source?.message ?? '';
      const projectPath = source?.project_path ?? thread.project_path;
      await checkStoredPath(principal, thread, projectPath);
      // A branch goes on from a checkpoint of its source run's graph: it runs the version that run ran.
      const pin =
        source?.manifest_hash && source.agent_version
          ? { agentVersion: source.agent_version, manifestHash: source.manifest_hash, draft: false }
          : pinnedTo(current);
      const runId = randomUUID();
      log.info(
        `graph run fork agent=${thread.agent} model=${model} thread=${thread.id} run=${runId} ` +
          `checkpoint=${checkpointId} user=${principal.name}`,
      );
      await admit(
        principal,
        {
          id: runId,
          threadId: thread.id,
          projectId: thread.project_id,
          newThread: null,
          forkedFrom: {
            checkpoint_id: checkpointId,
            run_id: checkpoint.run_id,
            outputs,
            ...(followsEnd ? { follows_end: true } : { phases: Object.keys(checkpoint.state.outputs) }),
          },
          agent: thread.agent,
          ...pin,
          model,
          message,
          projectPath,
          strategy: 'reject',
          comparisonOf: null,
          experimentItem: null,
        },
        traceparent,
      );
      return followable(runId, thread.id, 0);
    },

    /**
     * A comparison (docs/compare.md): the run's input again, on another model and/or version of its agent, in a new
     * thread of the run's project that names the run. The caller needs what starting that run needs: the member role,
     * the run's folder under her own rights, the model's provider. It acts on nothing (engine/comparison.ts).
     */
    async compareRun(
      principal: Principal,
      runId: string,
      request: CompareRequest,
      traceparent?: string,
    ): Promise<FollowableRun> {
      const original = await visibleRun(principal, runId, 'member');
      await refuseImported(principal, original.thread_id);
      if (original.status === 'running' || original.status === 'queued') {
        throw conflict(`run ${runId} is ${original.status}: compare it once it has ended or stops for a person`);
      }
      await checkStoredPath(
        principal,
        { id: original.thread_id, project_id: original.project_id, project_path: original.project_path },
        original.project_path,
      );
      let pin: { agentVersion: string; manifestHash: string; draft: boolean };
      if (request.agent_version !== undefined && request.agent_version !== original.agent_version) {
        const version = await agents.versionOf(original.project_id, original.agent, request.agent_version);
        if (!version) {
          throw badRequest(
            `invalid request body: agent_version: "${original.agent}" has no version "${request.agent_version}"`,
            { fields: [{ field: 'agent_version', message: 'no such version' }] },
          );
        }
        pin = { agentVersion: version.version, manifestHash: version.hash, draft: false };
      } else if (original.agent_version && original.manifest_hash) {
        pin = { agentVersion: original.agent_version, manifestHash: original.manifest_hash, draft: false };
      } else {
        pin = pinnedTo(await agentFor(original.project_id, original.agent));
      }
      const run = {
        id: randomUUID(),
        threadId: randomUUID(),
        projectId: original.project_id,
        newThread: { projectId: original.project_id },
        forkedFrom: null,
        agent: original.agent,
        ...pin,
        model: request.model ?? original.model ?? deps.defaultModel(),
        message: original.message ?? '',
        projectPath: original.project_path,
        strategy: 'reject' as const,
        comparisonOf: original.id,
        experimentItem: null,
      };
      log.info(
        `graph run compare agent=${run.agent} model=${run.model} thread=${run.threadId} run=${run.id} ` +
          `of=${original.id} user=${principal.name} version=${run.agentVersion}`,
      );
      await admit(principal, run, traceparent);
      return followable(run.id, run.threadId, 0);
    },

    /**
     * The version of a project's agent an experiment runs (docs/compare.md): the one named, or the current; a version
     * the agent does not have is a 400 on `agent_version`.
     */
    async experimentPin(
      projectId: string,
      agent: string,
      agentVersion: string | undefined,
    ): Promise<{ agent: string; agentVersion: string; manifestHash: string }> {
      const current = await agentFor(projectId, agent);
      const name = current.entry.manifest.name;
      if (agentVersion === undefined || agentVersion === current.version) {
        return { agent: name, agentVersion: current.version, manifestHash: current.hash };
      }
      const version = await agents.versionOf(projectId, name, agentVersion);
      if (!version) {
        throw badRequest(`invalid request body: agent_version: "${name}" has no version "${agentVersion}"`, {
          fields: [{ field: 'agent_version', message: 'no such version' }],
        });
      }
      return { agent: name, agentVersion: version.version, manifestHash: version.hash };
    },

    /** Checks a folder an experiment's item names, with the rights of who runs the experiment (400/403 if refused). */
    async checkItemFolder(principal: Principal, projectId: string, projectPath: string | null): Promise<void> {
      if (projectPath) await deps.checkProjectPath(principal, projectPath, projectId);
    },

    /**
     * An experiment's run of one dataset item (docs/compare.md): the item's input on the experiment's agent version
     * and model, in a thread of its own, acting on nothing and answered from the item's copy of its record. Started
     * as `principal`, who runs the experiment: her rights over the item's folder are checked again at each start.
     */
    async startExperimentRun(
      principal: Principal,
      start: {
        runId: string;
        projectId: string;
        experimentId: string;
        pin: { agent: string; agentVersion: string; manifestHash: string };
        model: string;
        item: { id: string; message: string; projectPath: string | null; sourceRunId: string | null };
      },
    ): Promise<'running' | 'queued'> {
      if (start.item.projectPath) await deps.checkProjectPath(principal, start.item.projectPath, start.projectId);
      const run = {
        id: start.runId,
        threadId: randomUUID(),
        projectId: start.projectId,
        newThread: { projectId: start.projectId },
        forkedFrom: null,
        ...start.pin,
        draft: false,
        model: start.model,
        message: start.item.message,
        projectPath: start.item.projectPath,
        strategy: 'reject' as const,
        // An item made from a run is read beside it as any comparison is (GET /runs/{id}/comparison).
        comparisonOf: start.item.sourceRunId,
        experimentItem: { itemId: start.item.id, experimentId: start.experimentId },
      };
      log.info(
        `graph run experiment agent=${run.agent} model=${run.model} thread=${run.threadId} run=${run.id} ` +
          `experiment=${start.experimentId} item=${start.item.id} user=${principal.name} version=${run.agentVersion}`,
      );
      return admit(principal, run, undefined);
    },

    async cancelRun(principal: Principal, runId: string, reason: string | null): Promise<RunAccepted> {
      const run = await visibleRun(principal, runId, 'member');
      await refuseImported(principal, run.thread_id);
      const seen = await engine.lastEventId(run.id);
      if (!(await engine.cancel(run.id, reason)))
        throw conflict(`run ${run.id} is ${run.status}: only a running or waiting run can be cancelled`);
      log.info(`run ${run.id} cancelled by ${principal.name}${reason ? `: ${reason}` : ''}`);
      return runAccepted({ runId: run.id, threadId: run.thread_id }, 'cancelled', seen);
    },

    /**
     * A run the caller may read, to follow from any process after `afterId`: what is stored, then live, to its end.
     * `over`: the caller has seen everything the run will send until someone acts on it (it ended, or waits at a gate).
     */
    async stream(principal: Principal, runId: string, afterId = 0): Promise<FollowableRun & { over: boolean }> {
      const run = await visibleRun(principal, runId);
      const over = await engine.nothingAfter(run.id, afterId);
      return { ...followable(run.id, run.thread_id, 0), over };
    },

    /** Throws (404) unless the caller may read the run: who may follow its stream. */
    async requireReadable(principal: Principal, runId: string): Promise<void> {
      await visibleRun(principal, runId);
    },

    /**
     * Waits until the run ends or stops for a person (a gate, a tool call that asks), or `timeoutS` passes, and
     * answers its detail: the status says which (a queued run is waited for through its turn). Follows the run's
     * stored events, so it waits on any process.
     */
    async waitFor(principal: Principal, runId: string, timeoutS: number, signal: AbortSignal): Promise<RunDetail> {
      const run = await visibleRun(principal, runId);
      if (run.status === 'running' || run.status === 'queued') {
        const waiting = AbortSignal.any([signal, AbortSignal.timeout(timeoutS * 1000)]);
        try {
          for await (const _batch of engine.join(run.id, await engine.lastEventId(run.id), waiting)) {
            // Nothing to read: the join ends at the run's end or its stop, or when the wait is over.
          }
        } catch (error) {
          if (!waiting.aborted) throw error;
        }
      }
      return this.runDetail(principal, runId);
    },

    async runDetail(principal: Principal, runId: string): Promise<RunDetail> {
      const run = await visibleRun(principal, runId);
      const nodes = await runs.nodes(run.id);
      const waiting = run.status === 'waiting_approval' && run.pending_gate !== null;
      const [resumable, decisions, approvals, round, usage, notices, asked] = await Promise.all([
        waiting ? engine.hasPendingInterrupt(run.thread_id) : false,
        deps.gates.listByRun(run.id),
        waiting ? deps.gates.approvalsOf(run.id, run.event_seq, run.pending_gate!.approvals_needed ?? 1) : null,
        waiting ? deps.gates.roundOf(run.id, run.event_seq) : null,
        deps.usage.forRun(principal, run),
        waiting ? deps.notices.noticesOf([{ runId: run.id, waitSeq: run.event_seq }]) : null,
        run.status === 'running' ? deps.questions.waiting(null, run.id) : [],
      ]);
      const { routes, pending_gate, event_seq: seq, project_id: _project, manifest_hash: _hash, ...fields } = run;
      const stop = waiting ? stopOf(run.id, seq, round!, pending_gate!) : null;
      const sent_to = (stop && notices?.get(stop.id)) || [];
      const questions = asked.map(openQuestionOf);
      return {
        ...fields,
        nodes,
        routes,
        pending_gate,
        stop,
        sent_to,
        questions,
        resumable,
        decisions,
        approvals,
        usage,
      };
    },
  };
}

export type RunsService = ReturnType<typeof runsService>;
