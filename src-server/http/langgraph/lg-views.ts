import type { GraphLayout } from '../../contracts/assets';
import { REJECTED_RUN_OUTPUT, type Checkpoint, type PendingGate, type RunStatus } from '../../contracts/runs';
import type { LgRunRow, LgThreadRow } from '../../storage/lg-threads';
import { assistantIdOf, interruptId } from './lg-ids';
import { lgInterrupt } from './lg-interrupts';
import { runMessages, threadValues, type LgMessage } from './lg-messages';
import type { LgInterrupt, LgRun, LgRunStatus, LgThread, LgThreadState, LgThreadStatus } from './lg-schemas';

/**
 * How the service's objects look as LangGraph's: threads, runs, and the state at a checkpoint. Pure functions of
 * what was read, so that a thread, its state and its history show the same messages under the same ids.
 */

/**
 * A run's status as these clients read it. A run stopped at a gate is `success`, as LangGraph's own server answers a
 * run that ended at an interrupt: a client that saw `running` would reconnect to its stream again and again.
 */
export function lgRunStatus(status: RunStatus): LgRunStatus {
  switch (status) {
    case 'queued':
      return 'pending';
    case 'running':
      return 'running';
    case 'error':
      return 'error';
    case 'cancelled':
      return 'interrupted';
    default:
      return 'success';
  }
}

/** The terminal node a rejected gate of this layout leads to (the first, should there be several): none without. */
export function rejectionEnd(layout: GraphLayout): string | null {
  const terminals = new Set(layout.nodes.filter((node) => node.kind === 'terminal').map((node) => node.id));
  return layout.edges.find((edge) => edge.condition === 'rejected' && terminals.has(edge.to))?.to ?? null;
}

export function lgThreadStatus(status: RunStatus | null): LgThreadStatus {
  if (status === 'running' || status === 'queued') return 'busy';
  if (status === 'waiting_approval') return 'interrupted';
  if (status === 'error') return 'error';
  return 'idle';
}

/**
 * Each run's messages and the messages before it on its branch, in the order the runs started. A run follows the run
 * started before it, as the thread's next message; a run on a branch follows the run it branched from when it started
 * where that run ended (an earlier message, edited), and replaces it from its branch point otherwise (a fork, which
 * starts with the outputs the branch point had).
 */
export class ThreadRuns {
  private readonly before = new Map<string, LgMessage[]>();
  private readonly through = new Map<string, LgMessage[]>();
  private readonly outputs = new Map<string, Map<string, string>>();
  private latest: LgMessage[] = [];

  /** `rejectionEnd`: the node a rejection ends an agent's run at, whose output is the run's last message. */
  constructor(
    readonly runs: LgRunRow[],
    rejectionEnd: (agent: string) => string | null = () => null,
  ) {
    for (const run of runs) {
      if (run.status === 'queued') continue;
      const from = run.forked_from?.run_id;
      let before = this.latest;
      if (run.forked_from?.follows_end) before = from ? (this.through.get(from) ?? before) : [];
      else if (from) before = this.before.get(from) ?? before;
      const outputs = new Map(this.inheritedBy(run));
      for (const n of run.nodes) outputs.set(n.node, n.output);
      // The node a rejection ends at writes no node row: its output is the run's, as its checkpoint holds it.
      const end = run.status === 'rejected' ? rejectionEnd(run.agent) : null;
      if (end) outputs.set(end, REJECTED_RUN_OUTPUT);
      this.outputs.set(run.id, outputs);
      this.before.set(run.id, before);
      this.latest = [...before, ...runMessages(run.id, run.message, outputs)];
      this.through.set(run.id, this.latest);
    }
  }

  /** A fork's outputs at its branch point, edits applied: the run's own until it runs those phases again. */
  private inheritedBy(run: LgRunRow): [string, string][] {
    const fork = run.forked_from;
    if (!fork?.phases) return [];
    const source = fork.run_id ? this.outputs.get(fork.run_id) : undefined;
    return fork.phases.map((node) => [node, fork.outputs[node] ?? source?.get(node) ?? '']);
  }

  /** The outputs a run starts with (a fork's, from its branch point), before it runs anything. */
  inherited(runId: string): [string, string][] {
    const run = this.runs.find((r) => r.id === runId);
    return run ? this.inheritedBy(run) : [];
  }

  /** The messages before `runId` on its branch (those of the latest run for a run not listed). */
  earlier(runId: string | null): LgMessage[] {
    const before = runId ? this.before.get(runId) : undefined;
    return before ?? [...this.latest];
  }

  /** The thread's messages now: those of its latest run's branch, through that run. */
  messages(): LgMessage[] {
    return this.latest;
  }

  last(): LgRunRow | undefined {
    return this.runs.filter((run) => run.status !== 'queued').at(-1);
  }
}

function threadMetadata(row: { agent: string | null; metadata: Record<string, unknown> }): Record<string, unknown> {
  return row.agent ? { ...row.metadata, graph_id: row.agent, assistant_id: assistantIdOf(row.agent) } : row.metadata;
}

/** The interrupt the thread's run waits at now, under its node: none unless it waits. */
function waitingInterrupts(row: LgThreadRow): Record<string, LgInterrupt[]> {
  if (row.last_run_status !== 'waiting_approval' || !row.pending_gate || !row.last_run_id) return {};
  return { [row.pending_gate.node]: [lgInterrupt(row.last_run_id, row.event_seq ?? 0, row.pending_gate, row.name)] };
}

export function lgThread(row: LgThreadRow, runs: ThreadRuns): LgThread {
  const last = runs.last();
  const outputs = Object.fromEntries((last?.nodes ?? []).map((n) => [n.node, n.output]));
  const at = row.updated_at.toISOString();
  return {
    thread_id: row.id,
    created_at: row.created_at.toISOString(),
    updated_at: at,
    state_updated_at: at,
    metadata: threadMetadata(row),
    status: lgThreadStatus(row.last_run_status),
    values: row.agent ? threadValues(runs.messages(), outputs) : {},
    interrupts: waitingInterrupts(row),
  };
}

export function lgRun(run: LgRunRow): LgRun {
  return {
    run_id: run.id,
    thread_id: run.thread_id,
    assistant_id: assistantIdOf(run.agent),
    created_at: run.started_at.toISOString(),
    updated_at: (run.finished_at ?? run.started_at).toISOString(),
    status: lgRunStatus(run.status),
    metadata: run.metadata ?? {},
    multitask_strategy: null,
  };
}

const ref = (threadId: string, checkpointId: string) => ({
  thread_id: threadId,
  checkpoint_ns: '',
  checkpoint_id: checkpointId,
  checkpoint_map: null,
});

/** A thread without checkpoints: a draft, or a thread whose runs have not stepped yet. */
export function emptyState(threadId: string): LgThreadState {
  return {
    values: {},
    next: [],
    tasks: [],
    checkpoint: ref(threadId, ''),
    parent_checkpoint: null,
    metadata: {},
    created_at: null,
  };
}

/**
 * The interrupt ids of the stops in a list of checkpoints: the k-th from last stop of a run is the k-th from last
 * event it stopped with (several approvals wait at one stop; a stop's checkpoint is written once).
 */
export function stopIds(checkpoints: Checkpoint[], stopSeqs: Map<string, number[]>): Map<string, string> {
  const ids = new Map<string, string>();
  const seen = new Map<string, number>();
  for (const cp of [...checkpoints].reverse()) {
    if (!cp.pending_gate || !cp.run_id) continue;
    const k = seen.get(cp.run_id) ?? 0;
    seen.set(cp.run_id, k + 1);
    const seqs = stopSeqs.get(cp.run_id) ?? [];
    const seq = seqs[seqs.length - 1 - k];
    ids.set(cp.checkpoint_id, seq === undefined ? `${cp.run_id}:${cp.pending_gate.node}` : interruptId(cp.run_id, seq));
  }
  return ids;
}

/**
 * The state at one checkpoint of `thread`. `stopId`: its interrupt's id when the run stopped there; `waiting`: the stop
 * as the run waits there now, when the thread still does (a stop decided or cancelled since is history, with nothing
 * to answer).
 */
export function lgState(
  thread: Pick<LgThreadRow, 'id' | 'name'>,
  cp: Checkpoint,
  runs: ThreadRuns,
  stopId: string | undefined,
  waiting: PendingGate | null,
): LgThreadState {
  // The thread's start has no messages yet.
  const messages =
    cp.source === 'input'
      ? []
      : [
          ...runs.earlier(cp.run_id),
          ...(cp.run_id ? runMessages(cp.run_id, cp.state.message, Object.entries(cp.state.outputs)) : []),
        ];
  const gate = cp.pending_gate;
  const interrupts =
    gate && waiting && cp.run_id
      ? [{ ...lgInterrupt(cp.run_id, 0, waiting, thread.name), id: stopId ?? `${cp.run_id}:${gate.node}` }]
      : [];
  const tasks = gate
    ? [
        {
          id: `${cp.checkpoint_id}:${gate.node}`,
          name: gate.node,
          error: null,
          interrupts,
          checkpoint: null,
          state: null,
          result: null,
        },
      ]
    : cp.next.map((node) => ({
        id: `${cp.checkpoint_id}:${node}`,
        name: node,
        error: null,
        interrupts: [],
        checkpoint: null,
        state: null,
        result: null,
      }));
  return {
    values: threadValues(messages, cp.state.outputs),
    next: cp.next,
    tasks,
    checkpoint: ref(thread.id, cp.checkpoint_id),
    parent_checkpoint: cp.parent_checkpoint_id ? ref(thread.id, cp.parent_checkpoint_id) : null,
    metadata: { source: cp.source, step: cp.step, run_id: cp.run_id, writes: cp.node ? { [cp.node]: null } : null },
    created_at: cp.created_at,
  };
}
