import type { Request, Response } from 'express';
import type { ResolvedAgent } from '../../services/agent-directory';
import type { Principal } from '../../auth/principal';
import type { RunEvent } from '../../contracts/events';
import { badRequest, conflict, errorMessage, notFound, ServiceError } from '../../contracts/errors';
import type { Checkpoint } from '../../contracts/runs';
import type { LgRunRow, LgThreadRow } from '../../storage/lg-threads';
import type { AppDeps } from '../deps';
import { openSse } from '../sse';
import { assistantIdOf, interruptId } from './lg-ids';
import { decisionOf, parseResume } from './lg-interrupts';
import { LgRunFold, type LgCursor, type LgEvent } from './lg-stream';
import type { LgRunCreate, StreamMode } from './lg-schemas';
import { emptyState, lgState, lgThread, rejectionEnd, stopIds, ThreadRuns } from './lg-views';

/** What a client gets when it names no modes: LangGraph's own default. */
export const DEFAULT_MODES: StreamMode[] = ['values'];

/** How many of a thread's newest checkpoints a history reads at most. */
const HISTORY_WINDOW = 1000;
/** Enough of the newest checkpoints to hold the newest listed one, past the input checkpoints beside it. */
const HEAD_WINDOW = 3;

/** A run this request started or resumed: where its stream begins for this client. */
export interface LgRunStarted {
  runId: string;
  threadId: string;
  /** The last event before this request's part of the run (0 for a new run; the stop's for a decision). */
  since: number;
  /** The run waits at the stop it was decided at (an approval that needs more): the stream shows that stop again. */
  stillWaiting: boolean;
  modes: StreamMode[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The run's message from a LangGraph input: the text of the last human message (`messages`, a string or text
 * parts), or `message`. Images and files have no counterpart in a run's message: refused rather than dropped.
 */
function messageOf(input: Record<string, unknown> | undefined): string {
  if (!input) throw badRequest('invalid request body: input: a run needs input with `messages` or `message`');
  if (typeof input.message === 'string' && input.message.trim()) return input.message;
  const messages = Array.isArray(input.messages) ? input.messages : [];
  const human = [...messages].reverse().find((m) => {
    if (typeof m === 'string') return true;
    const role = isObject(m) ? (m.type ?? m.role) : undefined;
    return role === 'human' || role === 'user';
  }) as unknown;
  const content = typeof human === 'string' ? human : isObject(human) ? human.content : undefined;
  let text: string | undefined;
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    const parts = content as unknown[];
    if (parts.some((part) => !isObject(part) || part.type !== 'text' || typeof part.text !== 'string')) {
      throw badRequest('invalid request body: input.messages: only text content is supported');
    }
    text = parts.map((part) => (part as { text: string }).text).join('\n');
  }
  if (!text?.trim()) {
    throw badRequest('invalid request body: input.messages: a run needs a human message with text');
  }
  return text;
}

/** `configurable` and `context` may carry the run's `model` and `project_path`, as the native run request does. */
function runOptions(body: LgRunCreate): { model?: string; project_path?: string } {
  const from = { ...(body.config?.configurable ?? {}), ...(body.context ?? {}) };
  const pick = (key: string) => {
    const value = from[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !value.trim()) throw badRequest(`invalid request body: ${key} must be text`);
    return value.trim();
  };
  const model = pick('model');
  const projectPath = pick('project_path');
  return { ...(model ? { model } : {}), ...(projectPath ? { project_path: projectPath } : {}) };
}

const frame = (event: LgEvent) =>
  `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n${event.id ? `id: ${event.id}\n` : ''}\n`;

/**
 * The LangGraph API's door onto the service (docs/langgraph-api.md): what its routes share. Every read and write goes
 * through the services the native routes use, with the caller, so roles and tenancy are the same.
 */
export class LgDoor {
  constructor(private readonly deps: AppDeps) {}

  /** Every agent and command the caller may see, as assistants are listed: the built-ins, then her projects'. */
  async assistants(principal: Principal): Promise<ResolvedAgent[]> {
    const { agents } = this.deps;
    return [...(await agents.list(principal, 'agent')), ...(await agents.list(principal, 'command'))];
  }

  /** An agent or a command the caller may see, by its graph id (its name) or its assistant id. */
  async agent(principal: Principal, assistantId: string): Promise<ResolvedAgent> {
    const found = (await this.assistants(principal)).filter(
      ({ entry: { manifest } }) => manifest.name === assistantId || assistantIdOf(manifest.name) === assistantId,
    );
    if (found.length > 1)
      throw conflict(`${found.length} assistants are named "${assistantId}" in projects you can see`);
    if (found[0]) return found[0];
    throw notFound(`no assistant "${assistantId}": each agent and command is one, by name or by its assistant_id`);
  }

  /** The node a rejection ends an agent's runs at, when it is loaded. */
  rejectionEnd = (agent: string): string | null => {
    const layout = this.deps.agents.layoutNamed(agent);
    return layout ? rejectionEnd(layout) : null;
  };

  threadRuns = async (threadId: string) =>
    new ThreadRuns(await this.deps.lgThreads.runs([threadId]), this.rejectionEnd);

  async thread(principal: Principal, id: string) {
    const row = await this.deps.lgThreads.visible(principal, id);
    return lgThread(row, await this.threadRuns(id));
  }

  async threads(rows: LgThreadRow[]) {
    const runs = await this.deps.lgThreads.runs(rows.filter((r) => r.agent).map((r) => r.id));
    return rows.map((row) =>
      lgThread(
        row,
        new ThreadRuns(
          runs.filter((run) => run.thread_id === row.id),
          this.rejectionEnd,
        ),
      ),
    );
  }

  /** A run of a thread the caller may see; a run of another thread is not found there. */
  async run(principal: Principal, threadId: string, runId: string): Promise<LgRunRow> {
    await this.deps.lgThreads.visible(principal, threadId);
    const run = (await this.deps.lgThreads.runs([threadId])).find((r) => r.id === runId);
    if (!run) throw notFound(`run ${runId} not found on thread ${threadId}`);
    return run;
  }

  /** The thread's checkpoints, newest first, as states; `before`: only those older than that checkpoint. */
  async history(principal: Principal, threadId: string, limit: number, before?: string) {
    const row = await this.deps.lgThreads.visible(principal, threadId);
    if (!row.agent) return [];
    // LangGraph's input checkpoints count in the window but are not listed: a window twice the page fills it.
    const window = before ? HISTORY_WINDOW : Math.min(HISTORY_WINDOW, 2 * limit + 2);
    const checkpoints = await this.deps.threadsService.checkpoints(principal, threadId, window);
    const newestFirst = checkpoints.reverse();
    const from = before ? newestFirst.findIndex((cp) => cp.checkpoint_id === before) + 1 : 0;
    if (before && from === 0) throw notFound(`checkpoint ${before} not found on thread ${threadId}`);
    return this.states(row, newestFirst.slice(from, from + limit), newestFirst[0]);
  }

  async state(principal: Principal, threadId: string, checkpointId?: string) {
    const row = await this.deps.lgThreads.visible(principal, threadId);
    if (!row.agent) return emptyState(threadId);
    if (checkpointId) {
      const thread = await this.deps.threadsService.visible(principal, threadId);
      const cp = await this.deps.threadsService.checkpointOf(thread, checkpointId);
      const head = await this.head(principal, threadId);
      return (await this.states(row, [cp], head))[0]!;
    }
    const head = await this.head(principal, threadId);
    return head ? (await this.states(row, [head], head))[0]! : emptyState(threadId);
  }

  /** The thread's newest checkpoint (an input checkpoint, written as a run starts, is not one). */
  private async head(principal: Principal, threadId: string): Promise<Checkpoint | undefined> {
    return (await this.deps.threadsService.checkpoints(principal, threadId, HEAD_WINDOW)).at(-1);
  }

  private async states(row: LgThreadRow, checkpoints: Checkpoint[], head: Checkpoint | undefined) {
    const runs = await this.threadRuns(row.id);
    const runIds = [...new Set(checkpoints.flatMap((cp) => (cp.run_id ? [cp.run_id] : [])))];
    const ids = stopIds(checkpoints, await this.deps.lgThreads.stopSeqs(runIds));
    const waiting = row.last_run_status === 'waiting_approval' ? row.pending_gate : null;
    return checkpoints.map((cp) =>
      lgState(row, cp, runs, ids.get(cp.checkpoint_id), cp.checkpoint_id === head?.checkpoint_id ? waiting : null),
    );
  }

  /**
   * Starts a run on the thread, or decides the stop its run waits at (`command.resume`), or ends it there
   * (`command.goto: "__end__"`). A resume answers the same run: one run of the service is one LangGraph run across
   * its stops.
   */
  async start(principal: Principal, threadId: string, body: LgRunCreate, req: Request): Promise<LgRunStarted> {
    const { lgThreads, runsService, approvals } = this.deps;
    const modes = body.stream_mode ?? DEFAULT_MODES;
    let row = await lgThreads.visible(principal, threadId).catch((error: unknown) => {
      if (body.if_not_exists === 'create' && error instanceof ServiceError && error.status === 404) return undefined;
      throw error;
    });
    row ??= await lgThreads.create(principal, { id: threadId, metadata: {} });
    const command = body.command;
    if (command && (command.resume !== undefined || command.goto !== undefined)) {
      const waiting = row.last_run_status === 'waiting_approval' && row.pending_gate && row.last_run_id;
      if (!waiting) throw conflict(`thread ${threadId} does not wait at an interrupt: nothing to resume`);
      const runId = row.last_run_id!;
      const gate = row.pending_gate!;
      const since = row.event_seq ?? 0;
      if (command.goto !== undefined) {
        if (command.goto !== '__end__')
          throw badRequest('invalid request body: command.goto: only "__end__" is supported');
        await runsService.cancelRun(principal, runId, 'resolved');
        return { runId, threadId, since, stillWaiting: false, modes };
      }
      const stop = interruptId(runId, since);
      const resume = parseResume(command.resume, stop);
      // These clients name no round: taken while the stop is in its first one (contracts/stops.ts).
      const decided = await approvals.decide(principal, { stop }, decisionOf(resume, gate.tool_call !== undefined));
      return { runId, threadId, since, stillWaiting: decided.status === 'waiting_approval', modes };
    }

    const agent = (await this.agent(principal, body.assistant_id)).entry.manifest.name;
    if (row.agent && row.agent !== agent)
      throw conflict(`thread ${threadId} belongs to "${row.agent}", not "${agent}"`);
    const bound = row.metadata.graph_id;
    if (!row.agent && typeof bound === 'string' && bound !== agent) {
      throw conflict(`thread ${threadId} was created for "${bound}", not "${agent}"`);
    }
    const checkpointId =
      body.checkpoint_id ?? (typeof body.checkpoint?.checkpoint_id === 'string' ? body.checkpoint.checkpoint_id : null);
    const options = runOptions(body);
    let started;
    if (checkpointId && row.agent && !(await this.isHead(principal, threadId, checkpointId))) {
      // A run from an earlier checkpoint: the service's fork. An edited message comes as input; a regenerated answer
      // comes without, and asks again what was asked there.
      started = await runsService.forkRun(
        principal,
        threadId,
        checkpointId,
        {
          ...(body.input ? { message: messageOf(body.input) } : {}),
          ...(options.model ? { model: options.model } : {}),
        },
        req.get('traceparent'),
      );
    } else {
      const message = messageOf(body.input);
      const request = { message, multitask_strategy: body.multitask_strategy ?? 'reject', ...options };
      started = row.agent
        ? await runsService.startRun(principal, agent, { ...request, thread_id: threadId }, req.get('traceparent'))
        : await runsService
            .startRun(principal, agent, { ...request, project_id: row.project_id }, req.get('traceparent'), threadId)
            .catch((error: unknown) => {
              // Two first runs of one draft at once: the second finds the thread's row written by the first.
              if ((error as { code?: string }).code === '23505') {
                throw conflict(`thread ${threadId} already has a run starting: try again`);
              }
              throw error;
            });
      if (!row.agent) await lgThreads.settled(threadId);
    }
    await lgThreads.recordRun(started.runId, modes, body.metadata ?? {});
    return { runId: started.runId, threadId, since: 0, stillWaiting: false, modes };
  }

  /**
   * A state update: only Agent Inbox's "mark as resolved" (`values: null`, `as_node: "__end__"`) has a meaning here,
   * the end of the run waiting at the thread's interrupt.
   */
  async resolve(principal: Principal, threadId: string, update: { values?: unknown; as_node?: string }): Promise<void> {
    if (update.values !== null || update.as_node !== '__end__') {
      throw badRequest(
        'invalid request body: this service updates no state; only {"values": null, "as_node": "__end__"} ends the run waiting at an interrupt',
      );
    }
    const row = await this.deps.lgThreads.visible(principal, threadId, 'member');
    if (row.last_run_status !== 'waiting_approval' || !row.last_run_id) {
      throw conflict(`thread ${threadId} does not wait at an interrupt: nothing to resolve`);
    }
    await this.deps.runsService.cancelRun(principal, row.last_run_id, 'resolved');
  }

  private async isHead(principal: Principal, threadId: string, checkpointId: string): Promise<boolean> {
    const head = await this.head(principal, threadId);
    return !head || head.checkpoint_id === checkpointId;
  }

  /**
   * The fold of a run's stream: on the messages before it on its branch, with the outputs it starts with (a fork's)
   * and the node a rejection would end it at.
   */
  private async foldOf(threadId: string, runId: string): Promise<{ run: LgRunRow; fold: LgRunFold }> {
    const [runs, row] = await Promise.all([this.deps.lgThreads.runs([threadId]), this.deps.lgThreads.get(threadId)]);
    const run = runs.find((r) => r.id === runId);
    if (!run) throw notFound(`run ${runId} not found on thread ${threadId}`);
    const thread = new ThreadRuns(runs, this.rejectionEnd);
    const fold = new LgRunFold({
      runId,
      threadId,
      threadName: row?.name ?? null,
      graphId: run.agent,
      assistantId: assistantIdOf(run.agent),
      message: run.message,
      earlier: thread.earlier(runId),
      inherited: thread.inherited(runId),
      rejectionEnd: this.rejectionEnd(run.agent),
    });
    return { run, fold };
  }

  /**
   * Streams the run as LangGraph's clients read it: `metadata` first (unless the client resumes after an event it
   * has), then what the stored events give in `modes` after `cursor` (and after `started.since`), to the run's end or
   * the stop it waits at. A client that resumes with nothing left to get is answered 204, as GET /runs/{id}/stream
   * answers it: a browser's EventSource stops there, where an empty stream would have it come back every 3 s.
   * `cancelOnDisconnect`: a client that leaves before the end or the stop cancels the run (LangGraph's
   * `on_disconnect: "cancel"`).
   */
  async pipe(
    principal: Principal,
    started: Pick<LgRunStarted, 'runId' | 'threadId' | 'since' | 'stillWaiting' | 'modes'>,
    cursor: LgCursor,
    res: Response,
    cancelOnDisconnect = false,
  ): Promise<void> {
    const { runsService, metrics } = this.deps;
    const from = started.since > cursor.seq ? { seq: started.since, k: Number.POSITIVE_INFINITY } : cursor;
    // `over`: nothing is stored after the client's event and the run does not execute; it may still lack events
    // derived from that one (those of its other modes), which the fold tells.
    const followable = await runsService.stream(principal, started.runId, from.seq);
    const { run, fold } = await this.foldOf(started.threadId, started.runId);
    const modes = new Set(started.modes);
    const gone = new AbortController();
    let ended = false;
    /** The frames of each batch of stored events, batches that give this client nothing left out. */
    async function* frames(): AsyncGenerator<string> {
      for await (const batch of followable.events(0, gone.signal)) {
        const out: string[] = [];
        for (const logged of batch) {
          const event = JSON.parse(logged.data) as RunEvent;
          // The stop a decision left waiting is shown again: the client asked, and it still waits there.
          const again = started.stillWaiting && logged.id === started.since;
          const after = again ? { seq: logged.id - 1, k: Number.POSITIVE_INFINITY } : from;
          out.push(...fold.next(logged.id, event, modes, after).map(frame));
          if (logged.terminal) ended = true;
        }
        if (out.length) yield out.join('');
      }
    }
    const batches = frames();
    const first = followable.over && cursor.seq > 0 ? await batches.next() : undefined;
    if (first?.done) {
      res.status(204).end();
      return;
    }
    res.setHeader('Content-Location', `/threads/${run.thread_id}/runs/${run.id}`);
    res.setHeader('Location', `/threads/${run.thread_id}/runs/${run.id}/stream`);
    const sse = openSse(res, metrics, { retry: false });
    void sse.closed.then(() => gone.abort());
    try {
      // Once per stream: a client resuming after an event has it (and SSE would give it that event's id again).
      if (cursor.seq === 0) {
        sse.send(frame({ event: 'metadata', data: { run_id: run.id, thread_id: run.thread_id, attempt: 1 } }));
      }
      if (first) {
        sse.send(first.value);
        await sse.room();
      }
      for await (const chunk of batches) {
        sse.send(chunk);
        await sse.room();
      }
    } catch (error) {
      sse.fail(`following run ${run.id} failed: ${errorMessage(error)}`);
    } finally {
      sse.end();
      if (!ended && cancelOnDisconnect && gone.signal.aborted) {
        await runsService.cancelRun(principal, run.id, 'the client disconnected').catch(() => undefined);
      }
    }
  }

  /**
   * The values the run's stream ends with (its end, or the stop it waits at, with `__interrupt__`), once it gets
   * there; a failed run's error as `__error__`. For join and wait.
   */
  async finalValues(principal: Principal, threadId: string, runId: string, signal: AbortSignal) {
    const { fold } = await this.foldOf(threadId, runId);
    const followable = await this.deps.runsService.stream(principal, runId, 0);
    const modes = new Set<StreamMode>(['values']);
    let last: unknown = fold.values();
    for await (const batch of followable.events(0, signal)) {
      for (const logged of batch) {
        for (const event of fold.next(logged.id, JSON.parse(logged.data) as RunEvent, modes, START)) {
          last = event.event === 'error' ? { __error__: event.data } : event.data;
        }
      }
    }
    return last as Record<string, unknown>;
  }
}

const START: LgCursor = { seq: 0, k: Number.POSITIVE_INFINITY };
