import type { RoutingRule, RuleSource } from '@contracts/assets';
import type { RunEvent } from '@contracts/events';
import type { StopNotice } from '@contracts/slack';
import { stopOf, type Stop } from '@contracts/stops';
import type { RunUsage } from '@contracts/usage';
import { noteFromEvent, noteFromRecord, sameStop, type DecisionNote } from './gate-decision';
import { applyRuntimeEvent, type ModelLoading, type ModelRetry } from './runtime-events';
import { applyToolEvent, waitingQuestions, type ToolCallView } from './tool-events';
import {
  FINISHED_RUN_STATUSES,
  type GateApprovals,
  type GateDecisionRecord,
  type NodeStatus,
  type PendingGate,
  type RunDetail,
  type RunNode,
  type RunStatus,
} from '@contracts/runs';

/**
 * How a phase looks on the canvas. A gate sent back (`gate_returned`) waits for the phase before it to run again;
 * an expired gate (`gate_expired`) was decided by its deadline rule, not by a person. A model phase waits
 * (`tool_waiting`) while a person decides one of its tool calls.
 */
export type PhaseState =
  | 'idle'
  | 'active'
  | 'completed'
  | 'gate_waiting'
  | 'tool_waiting'
  | 'gate_passed'
  | 'gate_returned'
  | 'gate_expired'
  | 'gate_rejected'
  | 'error'
  | 'cancelled';

export interface TranscriptEntry {
  node: string;
  text: string;
  /** A thinking model's reasoning for this phase, shown collapsed above its answer (never part of it). */
  thinking?: string;
  /** A decision at gate `node`, in the order it was taken among the phases' outputs (`text` is then empty). */
  decision?: DecisionNote;
  /** A tool call of phase `node`, where the phase made it among its answer's parts (`text` is then empty). */
  toolCall?: ToolCallView;
}

/**
 * How long a phase ran and waited, and what it cost in tokens. Times are epoch milliseconds. A stored run gives the
 * server's figures (`source: 'server'`); while a run streams, the phase's start and end are the moments its events
 * arrived (`'live'`), and its token counts the ones the runtime reported at its end.
 */
export interface PhaseFigures {
  enteredAt: number;
  exitedAt: number | null;
  queueWaitMs: number | null;
  promptTokens: number | null;
  outputTokens: number | null;
  /** Token events seen for the phase while streaming: what the canvas counts until the runtime's count arrives. */
  streamedTokens: number;
  source: 'server' | 'live';
}

export interface RouteTaken {
  from: string;
  to: string;
  rule: RoutingRule | null;
  /** Where the rule came from; null when no rule chose the route, or the run was recorded before it was kept. */
  source: RuleSource | null;
}

/** A rule as a person names it: `contains ship`, `starts with DONE`, `always`. */
export function ruleName(rule: RoutingRule): string {
  return rule.condition === 'always' ? 'always' : `${rule.condition.replace('_', ' ')} ${rule.match}`;
}

const SOURCE_TEXT: Record<RuleSource, string> = { asset: "the asset's rule", override: 'a saved override' };

/** `Route to output: rule 'contains ship' matched (a saved override)`; a gate's expiry says so instead. */
export function routeText(route: Pick<RouteTaken, 'from' | 'to' | 'rule' | 'source'>): string {
  if (!route.rule) return `Route to ${route.to}: the gate ${route.from} expired`;
  const source = route.source ? ` (${SOURCE_TEXT[route.source]})` : '';
  return `Route to ${route.to}: rule '${ruleName(route.rule)}' matched${source}`;
}

export interface RunView {
  runId: string | null;
  threadId: string | null;
  agent: string | null;
  model: string | null;
  message: string | null;
  projectPath: string | null;
  status: RunStatus | 'idle';
  startedAt: string | null;
  output: string;
  errorDetail: string | null;
  /** The reason given to the rejection or the cancel that ended the run. */
  endReason: string | null;
  phases: Record<string, PhaseState>;
  /** Nodes in the order they ran: the breadcrumb trail. */
  trail: string[];
  transcript: TranscriptEntry[];
  /** Per phase: its tool calls, in the order it made them (the same objects as the transcript's). */
  toolCalls: Record<string, ToolCallView[]>;
  /** Per phase: duration, queue wait and token counts. */
  figures: Record<string, PhaseFigures>;
  queue: { position: number; estimatedWaitS: number } | null;
  /** A queued run's place in its thread's line (1: next), until it starts. */
  lineup: number | null;
  /** The run waits for the server itself, not for the model: its place among the runs the server admits. */
  serverQueue: { position: number; running: number } | null;
  /** The local runtime is loading the model of the phase about to answer. */
  loading: ModelLoading | null;
  /** The phase's model call is being tried again after a passing failure (a 429, a reset connection). */
  retrying: ModelRetry | null;
  warnings: string[];
  /** The routes the run took other than the graph's own edges: by a routing rule, or by a gate's expiry (no rule). */
  routes: RouteTaken[];
  flash: string | null;
  pendingGate: PendingGate | null;
  /**
   * Where the run waits, with the round shown (contracts/stops.ts): a decision names it, so that a text another
   * approver edited since is not approved unseen. Null when nothing waits.
   */
  stop: Stop | null;
  /**
   * Where the stop the view shows was sent (a Slack channel) and how that went, as stored: read when the run rests at
   * it and while it waits; empty when nowhere, and once nothing waits.
   */
  sentTo: StopNotice[];
  /** The pending gate's approvals so far (stored or reported by a decision); null when no gate waits. */
  approvals: GateApprovals | null;
  /** The run's decisions as recorded, oldest first: read when the run rests (settle) and while its gate waits. */
  decisions: GateDecisionRecord[];
  /** Gates that sent the flow back to an earlier phase (respond), drawn as edges back on the canvas. */
  returns: { from: string; to: string }[];
  /** The pending gate can be decided: its run's checkpoint is kept (false once no gate waits). */
  resumable: boolean;
  /**
   * The run's model calls added up (tokens, cost, time), in all and per phase, as stored once it rests; null before,
   * and for someone who may read the run but not see its spend.
   */
  usage: RunUsage | null;
  /** A run on a branch of its thread: the checkpoint it was forked from, and the run that wrote it. */
  forkedFrom: { runId: string | null; checkpointId: string } | null;
  /** A comparison (docs/compare.md): the run it compares; null for any other run. */
  comparisonOf: string | null;
  /**
   * When the last question of a tool server was answered or expired, as this studio saw it (epoch ms): the run, which
   * went on running while a person answered, is measured for being stuck from then.
   */
  lastAnswerAt: number | null;
  lastEventId: number;
}

export function emptyView(): RunView {
  return {
    runId: null,
    threadId: null,
    agent: null,
    model: null,
    message: null,
    projectPath: null,
    status: 'idle',
    startedAt: null,
    output: '',
    errorDetail: null,
    endReason: null,
    phases: {},
    trail: [],
    transcript: [],
    toolCalls: {},
    figures: {},
    queue: null,
    lineup: null,
    serverQueue: null,
    loading: null,
    retrying: null,
    warnings: [],
    routes: [],
    flash: null,
    pendingGate: null,
    stop: null,
    sentTo: [],
    approvals: null,
    decisions: [],
    returns: [],
    resumable: false,
    usage: null,
    forkedFrom: null,
    comparisonOf: null,
    lastAnswerAt: null,
    lastEventId: 0,
  };
}

function append(view: RunView, node: string, text: string): void {
  const last = view.transcript.at(-1);
  if (last && last.node === node && !last.decision && !last.toolCall) last.text += text;
  else view.transcript.push({ node, text });
}

/** A gate was decided: it waits no more, and the decision takes its place in the transcript. */
function decided(view: RunView, note: DecisionNote, state: PhaseState): void {
  view.phases[note.gate] = state;
  view.pendingGate = null;
  view.stop = null;
  view.sentTo = [];
  view.approvals = null;
  view.resumable = false;
  view.transcript.push({ node: note.gate, text: '', decision: note });
}

/** A node's stored or reported status as the canvas shows it. */
const NODE_STATE: Record<NodeStatus, PhaseState> = {
  running: 'active',
  completed: 'completed',
  waiting_approval: 'gate_waiting',
  approved: 'gate_passed',
  rejected: 'gate_rejected',
  error: 'error',
  cancelled: 'cancelled',
};

/**
 * The figures a phase's events still measure: none once its stored row gave them with its end (StoredPhases), which
 * its replayed events must not change.
 */
function liveFigures(view: RunView, node: string): PhaseFigures | null {
  const figures = view.figures[node];
  return figures && figures.source === 'server' && figures.exitedAt !== null ? null : (figures ?? null);
}

/**
 * Folds `count` token events of one phase, the first of them `first`, into the view: `text` their texts in order and
 * `id` the last one's. The same change as folding each of them one by one.
 */
function applyTokens(
  view: RunView,
  first: Extract<RunEvent, { type: 'token' }>,
  text: string,
  count: number,
  id: number,
): void {
  view.lastEventId = Math.max(view.lastEventId, id);
  applyRuntimeEvent(view, first);
  view.queue = null;
  append(view, first.node, text);
  const figures = liveFigures(view, first.node);
  if (figures) figures.streamedTokens += count;
}

/**
 * Folds a batch of events in order: a run of one phase's tokens at once, without `apply`, and every other event as
 * `apply` (applyEvent by default) folds it. A reactive view pays for every change, and at a fast model's pace a
 * frame's batch holds a thousand tokens, which change the view once rather than a thousand times.
 */
export function applyEvents(
  view: RunView,
  events: readonly { id: number; event: RunEvent }[],
  apply: (view: RunView, event: RunEvent, id: number) => void = applyEvent,
): void {
  for (let i = 0; i < events.length;) {
    const { id, event } = events[i]!;
    if (event.type !== 'token') {
      apply(view, event, id);
      i++;
      continue;
    }
    let text = event.text;
    let last = id;
    let next = i + 1;
    for (; next < events.length; next++) {
      const later = events[next]!;
      if (later.event.type !== 'token' || later.event.node !== event.node) break;
      text += later.event.text;
      last = later.id;
    }
    applyTokens(view, event, text, next - i, last);
    i = next;
  }
}

/**
 * Folds one stream event into the view; the same function serves live streams and replays. `now` is when the event
 * arrived (epoch ms), the time a live phase's figures are measured with.
 */
export function applyEvent(view: RunView, event: RunEvent, id: number, now = Date.now()): void {
  if (event.type === 'token') return applyTokens(view, event, event.text, 1, id);
  view.lastEventId = Math.max(view.lastEventId, id);
  applyRuntimeEvent(view, event);
  applyToolEvent(view, event, id);
  switch (event.type) {
    case 'run_queued':
      Object.assign(view, { runId: event.run_id, threadId: event.thread_id, status: 'queued', lineup: event.position });
      break;
    case 'run_start':
      Object.assign(view, {
        runId: event.run_id,
        threadId: event.thread_id,
        agent: event.agent,
        model: event.model,
        status: 'running',
        lineup: null,
      });
      view.startedAt ??= new Date().toISOString();
      break;
    case 'run_resumed':
      // Another server continues the run from its last checkpoint; the phase that was cut off runs again.
      view.status = 'running';
      view.queue = null;
      if (event.node) {
        // Its recorded model turns and tool calls are replayed, not sent again: only what streamed after its last
        // call is replaced.
        const lastCall = view.transcript.findLastIndex((entry) => entry.node === event.node && entry.toolCall);
        view.transcript = view.transcript.filter((entry, i) => entry.node !== event.node || i <= lastCall);
        view.phases[event.node] = 'idle';
      }
      view.warnings.push(
        `The server running this run stopped; another server resumed it from its last checkpoint` +
          (event.node ? `, running ${event.node} again` : '') +
          ` (attempt ${event.attempt}).`,
      );
      break;
    case 'node_enter':
      view.phases[event.node] = 'active';
      view.trail.push(event.node);
      view.queue = null;
      view.serverQueue = null;
      view.figures[event.node] = {
        enteredAt: now,
        exitedAt: null,
        queueWaitMs: null,
        promptTokens: null,
        outputTokens: null,
        streamedTokens: 0,
        source: 'live',
      };
      break;
    case 'node_exit': {
      view.phases[event.node] = NODE_STATE[event.status];
      const figures = liveFigures(view, event.node);
      if (figures) {
        figures.exitedAt = now;
        figures.queueWaitMs = event.queue_wait_ms ?? null;
        figures.promptTokens = event.prompt_tokens ?? null;
        figures.outputTokens = event.output_tokens ?? null;
      }
      break;
    }
    case 'queue':
      view.queue = { position: event.position, estimatedWaitS: event.estimated_wait_s };
      break;
    case 'server_queue':
      view.serverQueue = { position: event.position, running: event.running };
      break;
    case 'budget_warning':
      view.warnings.push(`Budget warning: ${event.message}.`);
      break;
    case 'context_trimmed':
      view.warnings.push(
        event.estimated_tokens_after > event.budget
          ? `Context over budget for ${event.node}: ${event.dropped_messages} older message(s) dropped, still ≈${event.estimated_tokens_after} tokens (budget ${event.budget}); the call was not sent.`
          : `Context trimmed for ${event.node}: ${event.dropped_messages} older message(s) dropped` +
              (event.trimmed_parts?.length ? `, cut: ${event.trimmed_parts.join(', ')}` : '') +
              ` (≈${event.estimated_tokens_before} → ${event.estimated_tokens_after} tokens, budget ${event.budget}).`,
      );
      break;
    case 'tool_question_answered':
      view.lastAnswerAt = now;
      break;
    case 'route_matched':
      view.routes.push({ from: event.from, to: event.to, rule: event.rule, source: event.source ?? null });
      view.flash = event.to;
      break;
    case 'gate_waiting':
    case 'tool_waiting': {
      const { type, ...gate } = event;
      view.phases[event.node] = type;
      view.status = 'waiting_approval';
      view.pendingGate = gate;
      // A new stop, in its first round: its id is the run's and this event's.
      view.stop = view.runId ? stopOf(view.runId, id, 1, gate) : null;
      // Sent nowhere yet: the stored record says where once the run rests at it.
      view.sentTo = [];
      // Reached just now (again, after a respond): nobody has approved this stop yet.
      view.approvals = { needed: event.approvals_needed ?? 1, given: 0, by: [] };
      view.resumable = true;
      break;
    }
    case 'tool_decided':
      // The phase goes on, whatever was decided: a call not run is told to its model, which answers on.
      view.phases[event.node] = 'active';
      view.status = 'running';
      view.pendingGate = null;
      view.stop = null;
      view.sentTo = [];
      view.approvals = null;
      view.resumable = false;
      break;
    case 'gate_approved':
    case 'gate_edited':
      // An edited gate is passed: the run goes on with the edited texts.
      decided(view, noteFromEvent(event), 'gate_passed');
      view.status = 'running';
      break;
    case 'gate_responded':
      decided(view, noteFromEvent(event), 'gate_returned');
      view.status = 'running';
      view.returns.push({ from: event.node, to: event.to });
      // The phase before the gate works again: its card shows this new run of it, not the first.
      view.phases[event.to] = 'active';
      delete view.figures[event.to];
      break;
    case 'gate_rejected':
      decided(view, noteFromEvent(event), 'gate_rejected');
      break;
    case 'gate_expired':
      decided(view, noteFromEvent(event), 'gate_expired');
      if (event.outcome !== 'reject') view.status = 'running';
      if (event.outcome === 'route' && event.to) {
        view.routes.push({ from: event.node, to: event.to, rule: null, source: null });
        view.flash = event.to;
      }
      break;
    case 'run_rejected':
      view.status = 'rejected';
      view.queue = null;
      view.endReason = event.reason;
      break;
    case 'run_done':
      view.status = 'completed';
      view.queue = null;
      view.output = event.output;
      break;
    case 'run_error':
      view.status = 'error';
      view.errorDetail = event.error_detail;
      stopped(view, 'error');
      break;
    case 'run_cancelled':
      view.status = 'cancelled';
      view.endReason = event.reason;
      stopped(view, 'cancelled');
      break;
  }
}

/**
 * The run ended where it was: the phase working, or the gate or tool call waiting (a run cancelled there), ends
 * with it.
 */
function stopped(view: RunView, state: 'error' | 'cancelled'): void {
  view.queue = null;
  view.serverQueue = null;
  view.pendingGate = null;
  view.stop = null;
  view.sentTo = [];
  view.approvals = null;
  view.resumable = false;
  for (const [node, phase] of Object.entries(view.phases))
    if (phase === 'active' || phase === 'gate_waiting' || phase === 'tool_waiting') view.phases[node] = state;
}

/**
 * A stored run before its events are folded in: what its row says and its events do not (the message, the project
 * path, when it started). Its events then make the rest, as they made it live.
 */
export function runView(detail: RunDetail): RunView {
  return {
    ...emptyView(),
    runId: detail.id,
    threadId: detail.thread_id,
    agent: detail.agent,
    model: detail.model,
    message: detail.message,
    projectPath: detail.project_path,
    status: detail.status,
    startedAt: detail.started_at,
    forkedFrom: detail.forked_from
      ? { runId: detail.forked_from.run_id, checkpointId: detail.forked_from.checkpoint_id }
      : null,
    comparisonOf: detail.comparison_of,
  };
}

/**
 * The event that ends a run as its row says it ended, or null while it runs or waits. A run closed where no process
 * could tell its stream (cancelled while it waited at a gate, failed by the orphan sweep) has no such event stored.
 */
export function endEvent(detail: RunDetail): RunEvent | null {
  switch (detail.status) {
    case 'completed':
      return { type: 'run_done', run_id: detail.id, output: detail.output ?? '' };
    case 'rejected':
      return { type: 'run_rejected', run_id: detail.id, reason: detail.end_reason };
    case 'error':
      return { type: 'run_error', run_id: detail.id, error_detail: detail.error_detail ?? '' };
    case 'cancelled':
      return { type: 'run_cancelled', run_id: detail.id, reason: detail.end_reason };
    default:
      return null;
  }
}

/**
 * What a run's stored record adds to its folded events once it rests (ended, or waiting at a gate): the end its
 * stream did not carry, the decisions as recorded (who, role, when), each phase's figures as the server measured
 * them (its last run, as the fold keeps), and at the gate the view shows waiting, the approvals so far, where it was
 * sent (Slack) and whether its checkpoint can still be resumed.
 */
export function settle(view: RunView, detail: RunDetail): void {
  const end = endEvent(detail);
  if (end && !FINISHED_RUN_STATUSES.includes(view.status as RunStatus)) applyEvent(view, end, view.lastEventId);
  view.decisions = detail.decisions;
  view.usage = detail.usage;
  for (const node of detail.nodes) view.figures[node.node_id] = figuresFromNode(node);
  // The stop the view shows, as stored: edited by an approver since its event, it shows the stored text and round.
  const sameId = detail.stop !== null && view.stop?.id === detail.stop.id;
  if (view.status === 'waiting_approval' && (sameId || sameStop(view.pendingGate, detail.pending_gate))) {
    view.pendingGate = detail.pending_gate;
    view.stop = detail.stop;
    view.sentTo = detail.sent_to;
    view.approvals = detail.approvals;
    view.resumable = detail.resumable;
  }
}

/**
 * The stored figures of a run's phases for a replay of its events: the n-th time the replay enters a node, that
 * node's n-th row gives its figures, since the replay's arrival times say nothing of when the phase ran. A phase
 * still open keeps counting what streams on.
 */
export class StoredPhases {
  private readonly rows = new Map<string, RunNode[]>();
  private readonly taken = new Map<string, RunNode>();

  constructor(nodes: readonly RunNode[]) {
    for (const node of nodes) this.rows.set(node.node_id, [...(this.rows.get(node.node_id) ?? []), node]);
  }

  /** Folds one replayed event into the view. */
  apply(view: RunView, event: RunEvent, id: number, now = Date.now()): void {
    applyEvent(view, event, id, now);
    if (event.type === 'run_resumed' && event.node) {
      // A takeover drops the row of the phase it cut off: the row that run took is the one of its next run.
      const row = this.taken.get(event.node);
      if (row) this.rows.set(event.node, [row, ...(this.rows.get(event.node) ?? [])]);
      this.taken.delete(event.node);
    }
    if (event.type !== 'node_enter') return;
    const row = this.rows.get(event.node)?.shift();
    if (!row) return;
    this.taken.set(event.node, row);
    view.figures[event.node] = figuresFromNode(row);
  }
}

/**
 * The transcript with each decision as it was recorded: a decision the stream told takes the place of its records,
 * which add who decided with their role and when, one note per approval of a gate that needed several. The records
 * of a gate still waiting (approvals short of the number it needs) show on its card, not here; a decision whose
 * records are not read yet stays as the stream told it.
 */
export function recordedTranscript(view: RunView): TranscriptEntry[] {
  const queues = new Map<string, GateDecisionRecord[]>();
  // A decision on a tool call shows with the call, not between the phases.
  for (const record of view.decisions.filter((r) => !r.tool_call_id))
    queues.set(record.gate, [...(queues.get(record.gate) ?? []), record]);
  return view.transcript.flatMap((entry) => {
    if (!entry.decision) return [entry];
    const records = recordsOf(entry.decision, queues.get(entry.decision.gate) ?? []);
    return records.length ? records.map((r) => ({ node: r.gate, text: '', decision: noteFromRecord(r) })) : [entry];
  });
}

/**
 * The records of one decision, taken from the front of its gate's records: the approvals it counted, or whatever
 * approvals came before it at that stop and then itself.
 */
function recordsOf(note: DecisionNote, queue: GateDecisionRecord[]): GateDecisionRecord[] {
  if (note.kind === 'approve' || note.kind === 'edit') {
    let count = 0;
    const approving = (record: GateDecisionRecord | undefined) =>
      record?.decision === 'approve' || record?.decision === 'edit';
    while (count < Math.max(1, note.deciders.length) && approving(queue[count])) count++;
    return queue.splice(0, count);
  }
  const at = queue.findIndex((record) => record.decision === note.kind);
  return at < 0 ? [] : queue.splice(0, at + 1);
}

/** A stored node row's figures. */
export function figuresFromNode(node: RunNode): PhaseFigures {
  return {
    enteredAt: node.entered_at * 1000,
    exitedAt: node.exited_at === null ? null : node.exited_at * 1000,
    queueWaitMs: node.queue_wait_ms,
    promptTokens: node.prompt_tokens,
    outputTokens: node.output_tokens,
    streamedTokens: 0,
    source: 'server',
  };
}

/** How long a phase ran (ms): to its end, or to `now` while it runs. */
export function phaseDuration(figures: PhaseFigures, now = Date.now()): number {
  return Math.max(0, (figures.exitedAt ?? now) - figures.enteredAt);
}

/** The tokens a phase produced: the runtime's count when it reported one, else the token events streamed. */
export function phaseOutputTokens(figures: PhaseFigures): { count: number; reported: boolean } | null {
  if (figures.outputTokens !== null) return { count: figures.outputTokens, reported: true };
  return figures.streamedTokens > 0 ? { count: figures.streamedTokens, reported: false } : null;
}

export interface RunTotals {
  /** Sum of the phases' durations (ms). */
  runMs: number;
  queueWaitMs: number;
  promptTokens: number | null;
  outputTokens: number | null;
  phases: number;
}

/** The run's totals over its phases, for the State tab; a token total is null when no phase reported one. */
export function runTotals(view: RunView, now = Date.now()): RunTotals {
  const all = Object.values(view.figures);
  const sum = (pick: (f: PhaseFigures) => number | null) =>
    all.some((f) => pick(f) !== null) ? all.reduce((total, f) => total + (pick(f) ?? 0), 0) : null;
  return {
    runMs: all.reduce((total, f) => total + phaseDuration(f, now), 0),
    queueWaitMs: sum((f) => f.queueWaitMs) ?? 0,
    promptTokens: sum((f) => f.promptTokens),
    outputTokens: sum((f) => phaseOutputTokens(f)?.count ?? null),
    phases: all.length,
  };
}

/** 850 ms, 12.3 s, 4 min 05 s. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/**
 * A run still `running` two minutes after it started appears stuck (docs/run-lifecycle.md#run-statuses), whether
 * or not its stream is live. A tool server's question keeps it running while a person answers, as long as that
 * takes: it is not stuck then, and its two minutes count again from the answer.
 */
export const STUCK_AFTER_MS = 2 * 60_000;

export function isStuck(view: RunView, now = Date.now()): boolean {
  if (view.status !== 'running' || view.startedAt === null || waitingQuestions(view).length > 0) return false;
  return now - Math.max(Date.parse(view.startedAt), view.lastAnswerAt ?? 0) > STUCK_AFTER_MS;
}
