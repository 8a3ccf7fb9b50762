import type { RunEvent } from '@contracts/events';
import { noteFromEvent, noteFromRecord, type DecisionNote } from './gate-decision';
import { applyRuntimeEvent, restoreRuntimeFigures, type ModelLoading } from './runtime-events';
import type {
  GateApprovals,
  GateDecisionRecord,
  NodeStatus,
  PendingGate,
  RunDetail,
  RunNode,
  RunStatus,
} from '@contracts/runs';

/**
 * How a phase looks on the canvas. A gate sent back (`gate_returned`) waits for the phase before it to run again;
 * an expired gate (`gate_expired`) was decided by its deadline rule, not by a person.
 */
export type PhaseState =
  | 'idle'
  | 'active'
  | 'completed'
  | 'gate_waiting'
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
  /** Per phase: duration, queue wait and token counts. */
  figures: Record<string, PhaseFigures>;
  queue: { position: number; estimatedWaitS: number } | null;
  /** The local runtime is loading the model of the phase about to answer. */
  loading: ModelLoading | null;
  warnings: string[];
  routes: { from: string; to: string }[];
  flash: string | null;
  pendingGate: PendingGate | null;
  /** The pending gate's approvals so far (stored or reported by a decision); null when no gate waits. */
  approvals: GateApprovals | null;
  /** The run's decisions as recorded, oldest first: those of a stored run, refreshed when a followed run stops. */
  decisions: GateDecisionRecord[];
  /** Gates that sent the flow back to an earlier phase (respond), drawn as edges back on the canvas. */
  returns: { from: string; to: string }[];
  resumable: boolean;
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
    figures: {},
    queue: null,
    loading: null,
    warnings: [],
    routes: [],
    flash: null,
    pendingGate: null,
    approvals: null,
    decisions: [],
    returns: [],
    resumable: false,
    lastEventId: 0,
  };
}

function append(view: RunView, node: string, text: string): void {
  const last = view.transcript.at(-1);
  if (last && last.node === node && !last.decision) last.text += text;
  else view.transcript.push({ node, text });
}

/** A gate was decided: it waits no more, and the decision takes its place in the transcript. */
function decided(view: RunView, note: DecisionNote, state: PhaseState): void {
  view.phases[note.gate] = state;
  view.pendingGate = null;
  view.approvals = null;
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
 * A phase's figures as a stored run gave them are kept when its events are replayed: the replay's arrival times
 * say nothing of when the phase ran.
 */
function liveFigures(view: RunView, node: string): PhaseFigures | null {
  const figures = view.figures[node];
  return figures && figures.source === 'server' && figures.exitedAt !== null ? null : (figures ?? null);
}

/**
 * Folds one stream event into the view; the same function serves live streams and replays. `now` is when the event
 * arrived (epoch ms), the time a live phase's figures are measured with.
 */
export function applyEvent(view: RunView, event: RunEvent, id: number, now = Date.now()): void {
  view.lastEventId = Math.max(view.lastEventId, id);
  applyRuntimeEvent(view, event);
  switch (event.type) {
    case 'run_start':
      Object.assign(view, {
        runId: event.run_id,
        threadId: event.thread_id,
        agent: event.agent,
        model: event.model,
        status: 'running',
      });
      view.startedAt ??= new Date().toISOString();
      break;
    case 'run_resumed':
      // Another server continues the run from its last checkpoint; the phase that was cut off runs again.
      view.status = 'running';
      view.queue = null;
      if (event.node) {
        view.transcript = view.transcript.filter((entry) => entry.node !== event.node);
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
      if (!view.figures[event.node] || liveFigures(view, event.node))
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
    case 'token': {
      view.queue = null;
      append(view, event.node, event.text);
      const figures = liveFigures(view, event.node);
      if (figures) figures.streamedTokens++;
      break;
    }
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
    case 'context_trimmed':
      view.warnings.push(
        event.estimated_tokens_after > event.budget
          ? `Context over budget for ${event.node}: ${event.dropped_messages} older message(s) dropped, still ≈${event.estimated_tokens_after} tokens (budget ${event.budget}); the call was not sent.`
          : `Context trimmed for ${event.node}: ${event.dropped_messages} older message(s) dropped` +
              (event.trimmed_parts?.length ? `, cut: ${event.trimmed_parts.join(', ')}` : '') +
              ` (≈${event.estimated_tokens_before} → ${event.estimated_tokens_after} tokens, budget ${event.budget}).`,
      );
      break;
    case 'route_matched':
      view.routes.push({ from: event.from, to: event.to });
      view.flash = event.to;
      break;
    case 'gate_waiting': {
      const { type: _type, ...gate } = event;
      view.phases[event.node] = 'gate_waiting';
      view.status = 'waiting_approval';
      view.pendingGate = gate;
      // Reached just now (again, after a respond): nobody has approved this stop yet.
      view.approvals = { needed: event.approvals_needed ?? 1, given: 0, by: [] };
      view.resumable = true;
      break;
    }
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
        view.routes.push({ from: event.node, to: event.to });
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
      view.queue = null;
      view.errorDetail = event.error_detail;
      for (const [node, state] of Object.entries(view.phases)) if (state === 'active') view.phases[node] = 'error';
      break;
    case 'run_cancelled':
      view.status = 'cancelled';
      view.queue = null;
      view.endReason = event.reason;
      for (const [node, state] of Object.entries(view.phases)) if (state === 'active') view.phases[node] = 'cancelled';
      break;
  }
}

/** A stored run as the studio shows it after a reload or when a thread is selected. */
export function viewFromDetail(detail: RunDetail): RunView {
  const view = emptyView();
  Object.assign(view, {
    runId: detail.id,
    threadId: detail.thread_id,
    agent: detail.agent,
    model: detail.model,
    message: detail.message,
    projectPath: detail.project_path,
    status: detail.status,
    startedAt: detail.started_at,
    output: detail.output ?? '',
    errorDetail: detail.error_detail,
    endReason: detail.end_reason,
    pendingGate: detail.pending_gate,
    approvals: detail.approvals,
    decisions: detail.decisions,
    resumable: detail.resumable,
    routes: detail.routes.map(({ from, to }) => ({ from, to })),
  });
  // Each decision goes where it was taken: after the phases entered before it.
  const notes = detail.decisions.map((record) => ({ at: Date.parse(record.decided_at), note: noteFromRecord(record) }));
  const placeDecisionsUntil = (ms: number) => {
    while (notes.length && notes[0]!.at <= ms) {
      const { note } = notes.shift()!;
      view.transcript.push({ node: note.gate, text: '', decision: note });
    }
  };
  for (const node of detail.nodes) {
    placeDecisionsUntil(node.entered_at * 1000);
    view.phases[node.node_id] = NODE_STATE[node.status];
    view.trail.push(node.node_id);
    if (node.output) view.transcript.push({ node: node.node_id, text: node.output });
    view.figures[node.node_id] = figuresFromNode(node);
  }
  placeDecisionsUntil(Infinity);
  for (const record of detail.decisions) {
    if (record.decision === 'respond' && record.route_to) view.returns.push({ from: record.gate, to: record.route_to });
  }
  // A gate's node row says only waiting, approved or rejected: one its deadline decided is marked expired, and one
  // sent back, and not reached again since, is marked so.
  const last = new Map(detail.decisions.map((record) => [record.gate, record]));
  for (const [gate, record] of last) {
    const decidedAt = Date.parse(record.decided_at);
    if (detail.nodes.some((node) => node.node_id === gate && node.entered_at * 1000 > decidedAt)) continue;
    if (record.decision === 'expire') view.phases[gate] = 'gate_expired';
    else if (record.decision === 'respond') view.phases[gate] = 'gate_returned';
  }
  restoreRuntimeFigures(view, detail.nodes);
  return view;
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
 * or not its stream is live.
 */
export const STUCK_AFTER_MS = 2 * 60_000;

export function isStuck(view: RunView, now = Date.now()): boolean {
  return view.status === 'running' && view.startedAt !== null && now - Date.parse(view.startedAt) > STUCK_AFTER_MS;
}
