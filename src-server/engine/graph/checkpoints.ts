import { START, type StateSnapshot } from '@langchain/langgraph';
import type { GraphLayout } from '../../contracts/assets';
import type { Checkpoint, PendingGate } from '../../contracts/runs';
import { phaseBeforeGate, type CompiledRunGraph, type RunStateValue } from './graph-builder';

/**
 * A thread's checkpoint history, read from LangGraph's checkpointer, and the branch point a fork starts from.
 *
 * Each checkpoint is tied to its run by the state itself: every run writes its id into the `run_id` channel with
 * its first step, so every checkpoint it writes (also after a takeover in another process) carries it, atomically
 * with the state. LangGraph's `input` checkpoints are not listed: written before a run's first step, they hold
 * the previous run's state plus the request not yet applied, which the next checkpoint shows applied.
 */

const idOf = (config: StateSnapshot['config'] | undefined): string | null =>
  (config?.configurable?.checkpoint_id as string | undefined) ?? null;

function pendingGate(snapshot: StateSnapshot): PendingGate | null {
  for (const task of snapshot.tasks) {
    const value = task.interrupts[0]?.value as PendingGate | undefined;
    if (value?.node) return value;
  }
  return null;
}

/** The most checkpoints a history lists unless asked for fewer or more (GET /threads/{id}/checkpoints). */
export const HISTORY_LIMIT = 200;

const sourceOf = (snapshot: StateSnapshot) => (snapshot.metadata as { source?: string } | undefined)?.source ?? 'loop';

/**
 * One checkpoint as the API shows it. `parent` is the checkpoint before it: a loop step ran the nodes its parent had
 * next; a branch point (an update) ran none. Its parent as listed skips an input checkpoint, which is not listed:
 * a run's first checkpoint follows where the run before it ended (or the one a run from an older end started from),
 * so the listed checkpoints form one tree across runs and branches. The thread's first input checkpoint, which has
 * no parent, stays the parent: the thread's start, where a run with another first message starts.
 */
function toCheckpoint(snapshot: StateSnapshot, parent: StateSnapshot | undefined): Checkpoint {
  const source = sourceOf(snapshot);
  const ran = source === 'loop' ? (parent?.next ?? []).filter((n) => n !== '__start__') : [];
  const values = snapshot.values as Partial<RunStateValue>;
  const pastInput = parent && sourceOf(parent) === 'input' ? idOf(parent.parentConfig) : null;
  const parentId = pastInput ?? idOf(snapshot.parentConfig);
  return {
    checkpoint_id: idOf(snapshot.config)!,
    parent_checkpoint_id: parentId,
    run_id: values.run_id ?? null,
    step: (snapshot.metadata as { step?: number } | undefined)?.step ?? 0,
    source,
    node: ran[0] ?? null,
    next: [...snapshot.next],
    pending_gate: pendingGate(snapshot),
    created_at: snapshot.createdAt ?? new Date(0).toISOString(),
    state: {
      message: values.message ?? null,
      outputs: values.outputs ?? {},
      route: values.route ?? null,
      route_rule: values.route_rule ?? null,
      approved: values.approved ?? null,
      decision_reason: values.decision_reason ?? null,
      last_node: values.last_node ?? null,
    },
  };
}

/**
 * The thread's checkpoints across its runs and branches, oldest first: the newest `limit` LangGraph wrote (the
 * input checkpoints among them are not listed). Each holds the whole state, the conversation history included, so a
 * long thread is read a window at a time rather than whole.
 */
export async function threadCheckpoints(
  graph: CompiledRunGraph,
  threadId: string,
  limit = HISTORY_LIMIT,
): Promise<Checkpoint[]> {
  const snapshots: StateSnapshot[] = [];
  for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: threadId } }, { limit })) {
    snapshots.push(snapshot);
  }
  snapshots.reverse();
  const byId = new Map(snapshots.map((s) => [idOf(s.config), s]));
  const listed: Checkpoint[] = [];
  for (const snapshot of snapshots) {
    if (sourceOf(snapshot) === 'input') continue;
    const parentId = idOf(snapshot.parentConfig);
    // The oldest in the window may follow a checkpoint outside it.
    const parent = byId.get(parentId) ?? (parentId ? await readAt(graph, threadId, parentId) : undefined);
    listed.push(toCheckpoint(snapshot, parent));
  }
  return listed;
}

async function readAt(
  graph: CompiledRunGraph,
  threadId: string,
  checkpointId: string,
): Promise<StateSnapshot | undefined> {
  const snapshot = await graph.getState({ configurable: { thread_id: threadId, checkpoint_id: checkpointId } });
  // LangGraph answers an empty state for an id it does not have.
  return idOf(snapshot.config) === checkpointId && snapshot.createdAt ? snapshot : undefined;
}

/**
 * One checkpoint of the thread, or undefined when the thread has none with that id. Of the input checkpoints only the
 * thread's start is one (listed checkpoints name it as the parent of the first).
 */
export async function checkpointAt(
  graph: CompiledRunGraph,
  threadId: string,
  checkpointId: string,
): Promise<Checkpoint | undefined> {
  const snapshot = await readAt(graph, threadId, checkpointId);
  if (!snapshot || (sourceOf(snapshot) === 'input' && snapshot.parentConfig)) return undefined;
  const parentId = idOf(snapshot.parentConfig);
  return toCheckpoint(snapshot, parentId ? await readAt(graph, threadId, parentId) : undefined);
}

/** The edits a fork makes to a checkpoint's state before its run continues from it. */
export interface BranchEdits {
  /** The fork run's id: its checkpoints carry it. */
  runId: string;
  message: string;
  /** Node id → replaced output of a phase completed before the checkpoint. */
  outputs: Record<string, string>;
}

/**
 * The gate a branch from this state must pass again before anything after it runs: the last gate the run went past,
 * unless the branch is about to run that gate anyway. Checkpoints written before runs recorded the gate they passed
 * name none: a decision in their state (approved or rejected) was taken at a gate they visited.
 */
function gateToReenter(values: Partial<RunStateValue>, next: readonly string[], layout: GraphLayout): string | null {
  let gate = values.passed_gate;
  if (gate === undefined && values.approved !== null && values.approved !== undefined) {
    gate = layout.nodes.filter((node) => node.kind === 'gate' && (values.visits?.[node.id] ?? 0) > 0).at(-1)?.id;
  }
  return gate && !next.includes(gate) ? gate : null;
}

/**
 * Writes the branch point: a new checkpoint, child of the one forked from, with the fork's run id and edits. The
 * graph then continues from it; the checkpoints of the run forked from are not changed. A branch from past a gate
 * goes back to that gate, with the branch's content: what the gate approved was other text. Returns its config.
 */
export async function writeBranchPoint(
  graph: CompiledRunGraph,
  layout: GraphLayout,
  threadId: string,
  checkpointId: string,
  edits: BranchEdits,
): Promise<{ configurable: { thread_id: string; checkpoint_id: string } }> {
  const from = { configurable: { thread_id: threadId, checkpoint_id: checkpointId } };
  const state = await graph.getState(from);
  const values = state.values as Partial<RunStateValue>;
  const update: Partial<RunStateValue> = { run_id: edits.runId, message: edits.message };
  const edited = Object.keys(edits.outputs);
  if (edited.length) {
    update.outputs = { ...values.outputs, ...edits.outputs };
    update.edited = [...new Set([...(values.edited ?? []), ...edited])];
  }
  const gate = gateToReenter(values, state.next, layout);
  if (!gate) return configOf(await graph.updateState(from, update), threadId);
  // Written as the phase that leads into the gate, routed to it: the gate runs next and asks again.
  const before = phaseBeforeGate(layout.edges, gate) ?? START;
  const reentry = { ...update, route: gate, route_rule: null, approved: null, decision_reason: null };
  return configOf(await graph.updateState(from, reentry, before), threadId);
}

function configOf(
  written: StateSnapshot['config'],
  threadId: string,
): { configurable: { thread_id: string; checkpoint_id: string } } {
  return { configurable: { thread_id: threadId, checkpoint_id: idOf(written)! } };
}
